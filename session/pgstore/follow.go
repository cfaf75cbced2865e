package pgstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/vigil-run/vigil/session"
)

// Follow yields the records of session id from seq from on: those stored
// now, then each one as soon as any process appends it. The store's
// followers share one LISTEN connection (see fan), and read through the
// pool only when woken, so a follower waiting holds no connection: an API
// process can stream to thousands of idle sessions. It ends when ctx is
// done, without an error, or at the first error: an unknown session
// ([session.ErrNotFound]), a record that does not decode, reads that
// failed for a minute (a server that went away is waited for that long,
// and what was appended meanwhile read then: no gap, no repeat).
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
		// Subscribed before the first read, so that nothing appended
		// after it goes unnoticed.
		wake, unsubscribe, err := s.subscribe(id)
		if err != nil {
			fail(err)
			return
		}
		defer unsubscribe()
		var exists bool
		if err := s.pool.with(ctx, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM vigil_sessions WHERE id = $1)`, id).Scan(&exists)
		}); err != nil {
			fail(err)
			return
		}
		if !exists {
			fail(session.ErrNotFound)
			return
		}
		next := max(from, 0)
		var failing time.Time // since when reads fail, zero while they work
		pause := 50 * time.Millisecond
		for {
			var recs []*session.Record
			err := s.pool.with(ctx, func(c *pgx.Conn) (err error) {
				recs, err = after(ctx, c, id, next)
				return err
			})
			if err != nil {
				// A log that does not decode is final; a server that went
				// away (a restart, a failover) is waited for, a while.
				if errors.As(err, new(*session.CorruptError)) || ctx.Err() != nil {
					fail(err)
					return
				}
				if failing.IsZero() {
					failing = time.Now()
					s.log.Warn("following a session: reading failed; trying again", "session", id, "error", err)
				}
				if time.Since(failing) > followRetry {
					fail(err)
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-s.bg.Done():
					fail(errPoolClosed)
					return
				case <-time.After(pause):
				}
				pause = min(2*pause, time.Second)
				continue
			}
			failing, pause = time.Time{}, 50*time.Millisecond
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
				next = r.Seq() + 1
			}
			select {
			case <-ctx.Done():
				return
			case <-s.bg.Done():
				fail(errPoolClosed)
				return
			case <-wake:
			}
		}
	}
}

// followRetry bounds how long a follower whose reads fail (the database
// restarting, a failover) keeps trying before it ends with the error.
const followRetry = time.Minute

// fan is a store's one LISTEN connection for its followers: a
// notification that a session grew wakes that session's followers. When
// the connection fails it reconnects, and once listening again wakes
// every follower, for what was appended while nobody listened.
type fan struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{} // session → its followers' wake-ups
}

// subscribe returns a channel that receives when session id may have
// grown, starting the store's fan on first use; unsubscribe drops it.
func (s *Store) subscribe(id string) (wake <-chan struct{}, unsubscribe func(), err error) {
	s.mu.Lock()
	if s.bg.Err() != nil { // no goroutine starts once stopped (see shutdown)
		s.mu.Unlock()
		return nil, nil, errPoolClosed
	}
	if s.fan == nil {
		s.fan = &fan{subs: map[string]map[chan struct{}]struct{}{}}
		s.watchers.Add(1)
		go func(f *fan) {
			defer s.watchers.Done()
			f.run(s)
		}(s.fan)
	}
	f := s.fan
	s.mu.Unlock()
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	if f.subs[id] == nil {
		f.subs[id] = map[chan struct{}]struct{}{}
	}
	f.subs[id][ch] = struct{}{}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs[id], ch)
		if len(f.subs[id]) == 0 {
			delete(f.subs, id)
		}
	}, nil
}

// wake signals the followers of id, or of every session when all.
func (f *fan) wake(id string, all bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	signal := func(subs map[chan struct{}]struct{}) {
		for ch := range subs {
			select {
			case ch <- struct{}{}:
			default: // already signalled, not yet read
			}
		}
	}
	if all {
		for _, subs := range f.subs {
			signal(subs)
		}
		return
	}
	signal(f.subs[id])
}

// run keeps the fan's connection listening until the store closes.
func (f *fan) run(s *Store) {
	backoff := 50 * time.Millisecond
	for {
		listened, err := f.listen(s)
		if s.bg.Err() != nil {
			return
		}
		if listened {
			backoff = 50 * time.Millisecond
		}
		s.log.Warn("the followers' LISTEN connection failed; reconnecting", "error", err, "in", backoff)
		select {
		case <-s.bg.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// listen connects, LISTENs and dispatches notifications until the
// connection fails or the store closes; listened says whether it got as
// far as listening.
func (f *fan) listen(s *Store) (listened bool, err error) {
	cfg := s.pool.config()
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if n.Channel != s.channel {
			return
		}
		parts := strings.SplitN(n.Payload, " ", 3)
		if len(parts) == 3 && parts[0] == "e" {
			f.wake(parts[2], false)
		}
	}
	conn, err := pgx.ConnectConfig(s.bg, cfg)
	if err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	}()
	if _, err := conn.Exec(s.bg, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	f.wake("", true)
	for {
		if err := conn.PgConn().WaitForNotification(s.bg); err != nil {
			return true, fmt.Errorf("listen: %w", err)
		}
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
