package pgstore

import (
	"context"
	"fmt"

	"github.com/vigil-run/vigil/session"
)

// Staged appends. A live session stages the records of a turn's first
// request before it calls the model ([session.Stager]): the statement
// that appends them commits without waiting for the WAL's flush
// (stagedSQL), so they cost no synchronous commit, and yet a worker that
// dies or stops while the model answers leaves them stored, a turn the
// next claim repairs and continues. Until they are durable no follower is
// given them: the session row's volatile column holds the seq of the
// first event staged since the last synchronous commit, and followers
// read up to it. The next append of the session commits synchronously,
// which flushes the WAL past the staged commit too, and clears it; so
// does a Flush, and a follower that waited for them long enough
// (followStaged). A database that crashes before the WAL writer flushed
// them (within a few hundred milliseconds) loses them as a crashed
// machine loses a file's unsynced writes: then the holder's next append
// finds the log shorter than it thinks and fails with ErrConflict, and no
// follower had them.

// AppendStaged implements [session.Stager]: [Store.Append], committed
// asynchronously, the records durable with the session's next append or
// [Store.Flush]. With [WithDurableAppends] it is Append.
func (s *Store) AppendStaged(ctx context.Context, id string, next int64, records []session.Record) error {
	if s.durable || len(records) == 0 {
		return s.Append(ctx, id, next, records)
	}
	if err := checkID(id); err != nil {
		return fmt.Errorf("pgstore: append %s: %w", id, err)
	}
	if err := session.CheckSeqs(next, records); err != nil {
		return fmt.Errorf("pgstore: append %s: %w", id, err)
	}
	if err := s.writeWith(ctx, stagedSQL, id, s.heldFence(id), next, lines(records)); err != nil {
		return fmt.Errorf("pgstore: append %s: %w", id, err)
	}
	return nil
}

// durableSQL makes the staged events of session $1 durable: an update of
// its row, only when it has some, committed synchronously (which flushes
// the WAL past their commits), and the followers told. It reports whether
// the session exists.
const durableSQL = `WITH cfg AS (SELECT ` + syncSetting + ` AS v),
u AS (UPDATE vigil_sessions SET volatile = NULL WHERE id = $1 AND volatile IS NOT NULL RETURNING next),
n AS (SELECT pg_notify($2::text, 'e ' || u.next || ' ' || $1) FROM u)
SELECT EXISTS (SELECT 1 FROM vigil_sessions WHERE id = $1), (SELECT count(*) FROM n), (SELECT count(v) FROM cfg)`

// makeDurable makes the staged events of id durable, reporting whether
// the session exists.
func (s *Store) makeDurable(ctx context.Context, id string) (bool, error) {
	var exists bool
	var notified, cfg int64
	err := s.queryRow(ctx, []any{&exists, &notified, &cfg}, durableSQL, id, s.channel)
	return exists, err
}

var _ session.Stager = (*Store)(nil)
