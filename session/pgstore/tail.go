package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-run/vigil/session"
)

// tailQuery reads the events of a session from its last turn/start on
// (from its last event when it has none): the primary key is walked
// backwards from the end, so only the last turn's rows are read. A
// canonical line starts {"seq":N,"type":"…", so its first 48 bytes tell a
// turn/start; [session.TailOf] checks the decoded records again.
const tailQuery = `SELECT line FROM vigil_events WHERE session_id = $1 AND seq >= COALESCE(
	(SELECT seq FROM vigil_events WHERE session_id = $1
		AND position(',"type":"turn/start",'::bytea IN substring(line FROM 1 FOR 48)) > 0
		ORDER BY seq DESC LIMIT 1),
	(SELECT max(seq) FROM vigil_events WHERE session_id = $1), 0) ORDER BY seq`

// Tail implements [session.Tailer]: a summary reads the session's last
// turn, not its log.
func (s *Store) Tail(ctx context.Context, id string) (*session.Tail, error) {
	if err := checkID(id); err != nil {
		return nil, session.StoreError("pgstore", "tail", "", err)
	}
	var t *session.Tail
	err := s.pool.with(ctx, func(c *pgx.Conn) (err error) {
		t, err = tailConn(ctx, c, id)
		return err
	})
	if err != nil {
		return nil, session.StoreError("pgstore", "tail", id, err)
	}
	return t, nil
}

func tailConn(ctx context.Context, c *pgx.Conn, id string) (*session.Tail, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT header FROM vigil_sessions WHERE id = $1`, id)
	b.Queue(tailQuery, id)
	res := c.SendBatch(ctx, b)
	defer res.Close()
	var header []byte
	if err := res.QueryRow().Scan(&header); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, session.ErrNotFound
		}
		return nil, err
	}
	info, err := session.DecodeHeader(header)
	if err != nil {
		return nil, &session.CorruptError{Line: 1, Err: err}
	}
	if info.ID != id {
		return nil, fmt.Errorf("%w: the header names %s", session.ErrCorrupt, info.ID)
	}
	rows, err := res.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var recs []session.Record
	for rows.Next() {
		r, err := session.DecodeRecord(rows.RawValues()[0])
		if err == nil && len(recs) > 0 && r.Seq() != recs[len(recs)-1].Seq()+1 {
			err = fmt.Errorf("%w: seq %d after %d", session.ErrSeqGap, r.Seq(), recs[len(recs)-1].Seq())
		}
		if err != nil {
			return nil, &session.CorruptError{Line: len(recs) + 2, Err: err}
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return session.TailOf(info, recs), nil
}

var _ session.Tailer = (*Store)(nil)
