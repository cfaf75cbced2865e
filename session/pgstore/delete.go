package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-run/vigil/session"
)

// sessionTables are the tables that keep rows keyed by session_id, each
// deleted with its session (vigil_leases goes by its foreign key, and so
// would vigil_ledger: it is listed so that the list is whole). A table
// added for sessions joins this list, so that a deleted session leaves
// nothing behind.
var sessionTables = []string{"vigil_events", "vigil_jobs", "vigil_jobs_done", "vigil_ledger"}

// Delete implements [session.Deleter]: the session's row and every row
// keyed by it go in one transaction. Its followers and the watcher of a
// running claim are notified: a follower ends with ErrNotFound, a claim
// is cancelled, and the claim's end is ErrJobDone; an append under the
// session's lease is ErrNotFound.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return session.StoreError("pgstore", "delete", "", err)
	}
	err := s.pool.with(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `DELETE FROM vigil_sessions WHERE id = $1`, id)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return session.ErrNotFound
			}
			for _, t := range sessionTables {
				if _, err := tx.Exec(ctx, `DELETE FROM `+pgx.Identifier{t}.Sanitize()+` WHERE session_id = $1`, id); err != nil {
					return fmt.Errorf("%s: %w", t, err)
				}
			}
			// Sent at commit: followers ('e') and claim watchers ('c').
			_, err = tx.Exec(ctx, `SELECT pg_notify($1, 'e -1 ' || $2), pg_notify($3, 'c 0 ' || $2)`, s.channel, id, s.jobsChannel)
			return err
		})
	})
	if err != nil {
		return session.StoreError("pgstore", "delete", id, err)
	}
	return nil
}

var _ session.Deleter = (*Store)(nil)
