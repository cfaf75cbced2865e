package pgstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/vigil-run/vigil/session"
)

// pollInterval bounds how long a follower waits without a notification
// before it looks anyway (a notification is never expected to go missing;
// this only bounds the damage if one does).
const pollInterval = 2 * time.Second

// followRetry bounds how long a follower whose connection broke keeps
// trying to connect again (the database restarting, a failover) before it
// ends with the error.
const followRetry = time.Minute

// Follow yields the records of session id from seq from on: those
// stored now, then each one as soon as any process appends it (LISTEN/NOTIFY
// on a connection of its own). A connection lost while following is made
// again (for up to a minute of failed attempts), and the records appended
// meanwhile are read then: the sequence goes on without a gap or a
// repeat. It ends when ctx is done, without an error, or at the first
// error: an unknown session ([session.ErrNotFound]), a record that does
// not decode, no connection at the start or for that minute.
//
//	for r, err := range store.Follow(ctx, id, 0) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(r) // the canonical JSONL line
//	}
func (s *Store) Follow(ctx context.Context, id string, from int64) iter.Seq2[*session.Record, error] {
	return func(yield func(*session.Record, error) bool) {
		fail := func(err error) {
			if ctx.Err() == nil {
				yield(nil, fmt.Errorf("pgstore: follow %s: %w", id, err))
			}
		}
		if err := checkID(id); err != nil {
			fail(err)
			return
		}
		match := func(kind byte, sid string) bool { return kind == 'e' && sid == id }
		ln, err := s.listen(ctx, match)
		if err != nil {
			fail(err)
			return
		}
		var exists bool
		if err := ln.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM vigil_sessions WHERE id = $1)`, id).Scan(&exists); err != nil {
			ln.close()
			fail(err)
			return
		}
		if !exists {
			ln.close()
			fail(session.ErrNotFound)
			return
		}
		next := max(from, 0)
		for {
			more, err := follow(ctx, ln, id, &next, yield)
			lost := ln.conn.IsClosed()
			ln.close()
			if !more || ctx.Err() != nil {
				return
			}
			if !lost {
				fail(err) // not the connection: the query or the log
				return
			}
			s.log.Warn("following a session: the connection was lost; reconnecting", "session", id, "error", err)
			if ln, err = s.relisten(ctx, match); err != nil {
				fail(err)
				return
			}
		}
	}
}

// follow yields id's records from *next on, on ln, until yield stops
// (more is false) or an error. Listening comes first, so that a record
// appended between a read and the wait wakes it.
func follow(ctx context.Context, ln *listener, id string, next *int64, yield func(*session.Record, error) bool) (more bool, err error) {
	for {
		recs, err := after(ctx, ln.conn, id, *next)
		if err != nil {
			return true, err
		}
		for _, r := range recs {
			if !yield(r, nil) {
				return false, nil
			}
			*next = r.Seq() + 1
		}
		if err := ln.wait(ctx, pollInterval); err != nil {
			return true, err
		}
	}
}

// relisten connects a listener again after its connection was lost,
// trying every second or so for up to followRetry.
func (s *Store) relisten(ctx context.Context, match func(kind byte, id string) bool) (*listener, error) {
	deadline := time.Now().Add(followRetry)
	pause := 50 * time.Millisecond
	for {
		ln, err := s.listen(ctx, match)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return ln, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.bg.Done():
			return nil, errPoolClosed
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// after returns the records of id from seq next on.
func after(ctx context.Context, conn *pgx.Conn, id string, next int64) ([]*session.Record, error) {
	rows, err := conn.Query(ctx, `SELECT line FROM vigil_events WHERE session_id = $1 AND seq >= $2 ORDER BY seq`, id, next)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*session.Record
	for rows.Next() {
		r, err := session.DecodeRecord(rows.RawValues()[0])
		if err != nil {
			return nil, &session.CorruptError{Line: int(next) + 2, Err: err}
		}
		if r.Seq() != next {
			return nil, &session.CorruptError{Line: int(next) + 2, Err: fmt.Errorf("%w: seq %d, want %d", session.ErrSeqGap, r.Seq(), next)}
		}
		out = append(out, r)
		next++
	}
	return out, rows.Err()
}

// listener is a connection of its own that LISTENs on the store's channel
// and remembers whether a notification of interest arrived.
type listener struct {
	conn  *pgx.Conn
	match func(kind byte, id string) bool
	dirty atomic.Bool
}

// listen opens a listener for the notifications match accepts. Payloads
// are "e NEXT ID" (session ID now has NEXT events) and "l 0 ID" (the lease
// of session ID was released).
func (s *Store) listen(ctx context.Context, match func(kind byte, id string) bool) (*listener, error) {
	ln := &listener{match: match}
	cfg := s.pool.config()
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if n.Channel != s.channel || len(n.Payload) < 2 {
			return
		}
		parts := strings.SplitN(n.Payload, " ", 3)
		if len(parts) == 3 && ln.match(n.Payload[0], parts[2]) {
			ln.dirty.Store(true)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("listen: %w", err)
	}
	ln.conn = conn
	return ln, nil
}

// wait returns once a matching notification arrived since the previous
// wait, or after d; or with ctx's error.
func (ln *listener) wait(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for !ln.dirty.Swap(false) {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		wctx, cancel := context.WithTimeout(ctx, left)
		err := ln.conn.PgConn().WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) && !ln.conn.IsClosed() {
				return nil
			}
			return fmt.Errorf("listen: %w", err)
		}
	}
	return nil
}

func (ln *listener) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ln.conn.Close(ctx)
}
