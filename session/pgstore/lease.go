package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-run/vigil/session"
)

// lease is a turn lease this store holds.
type lease struct {
	s     *Store
	id    string
	token string
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// leaseToken returns the holder name of the lease this store holds on id,
// "" when it holds none.
func (s *Store) leaseToken(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.leases[id]; l != nil {
		return l.token
	}
	return ""
}

// busyError is the ErrBusy of a lease held by holder for left seconds
// more: a *session.LockError, so that a waiter can show both.
func busyError(id, holder string, left float64) error {
	d := time.Duration(math.Max(left, 0) * float64(time.Second))
	return &session.LockError{Holder: holder, Expires: time.Now().Add(d),
		Err: fmt.Errorf("%w: %s: a turn is running in %s (its lease expires in %s unless renewed)",
			ErrBusy, id, holder, d.Round(100*time.Millisecond))}
}

// Lease takes the turn lease of session id: until release is called, no
// other holder (another Store, in this process or any other) can take it,
// and their appends to the session are refused with [ErrBusy]. The lease
// lives in the database with an expiry and is renewed in the background
// every third of the TTL; if this process dies, it expires and the next
// holder takes over (and should open the session afresh, which repairs
// the interrupted turn; see [live.OpenLeased] (package session/live)).
//
// When another holder has the lease, Lease returns an error wrapping
// ErrBusy (and so [session.ErrLocked]) that names it, or, with wait,
// waits until the lease is released or expires, or ctx is done. An
// unknown session is [session.ErrNotFound].
//
// Leases are not reentrant: a store that holds a session's lease is busy
// to itself too. release is idempotent and blocks for at most a round
// trip; a
// lease that could not be renewed (the database was unreachable for a
// TTL) is lost, and the holder's next append says so.
func (s *Store) Lease(ctx context.Context, id string, wait bool) (release func(), err error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("pgstore: lease: %w", err)
	}
	var ln *listener
	defer func() {
		if ln != nil {
			ln.close()
		}
	}()
	for {
		l, holder, left, err := s.tryLease(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("pgstore: lease %s: %w", id, err)
		}
		if l != nil {
			return l.release, nil
		}
		if holder == "" {
			continue // the holder left between our two looks
		}
		if !wait {
			return nil, busyError(id, holder, left) // it names the package and id

		}
		if ln == nil {
			// Listen before the next try, so a release in between wakes us.
			if ln, err = s.listen(ctx, func(kind byte, sid string) bool { return kind == 'l' && sid == id }); err != nil {
				return nil, fmt.Errorf("pgstore: lease %s: %w", id, err)
			}
			continue
		}
		// Wake when it is released, or when it expires.
		d := time.Duration(left*float64(time.Second)) + 20*time.Millisecond
		d = min(max(d, 20*time.Millisecond), s.ttl)
		if err := ln.wait(ctx, d); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("pgstore: lease %s: waiting for %s: %w", id, holder, ctx.Err())
			}
			return nil, fmt.Errorf("pgstore: lease %s: %w", id, err)
		}
	}
}

// tryLease takes the lease if it is free or expired. Otherwise it returns
// the live lease's holder and seconds left ("" if it was gone when
// looked at).
func (s *Store) tryLease(ctx context.Context, id string) (*lease, string, float64, error) {
	s.mu.Lock()
	s.leaseSeq++
	token := fmt.Sprintf("%s#%d", s.holder, s.leaseSeq)
	s.mu.Unlock()
	ttl := s.ttl.Milliseconds()
	var got bool
	err := s.queryRow(ctx, []any{&got}, `INSERT INTO vigil_leases (session_id, holder, expires)
		SELECT id, $2, clock_timestamp() + $3 * interval '1 millisecond' FROM vigil_sessions WHERE id = $1
		ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires = excluded.expires
		WHERE vigil_leases.expires <= clock_timestamp()
		RETURNING true`, id, token, ttl)
	if err == nil {
		l := &lease{s: s, id: id, token: token, stop: make(chan struct{}), done: make(chan struct{})}
		s.mu.Lock()
		s.leases[id] = l
		s.mu.Unlock()
		go l.renew()
		return l, "", 0, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, "", 0, err
	}
	var holder *string
	var left *float64
	err = s.queryRow(ctx, []any{&holder, &left}, `SELECT l.holder, extract(epoch FROM l.expires - clock_timestamp())::float8
		FROM vigil_sessions s LEFT JOIN vigil_leases l ON l.session_id = s.id AND l.expires > clock_timestamp()
		WHERE s.id = $1`, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", 0, session.ErrNotFound
	}
	if err != nil {
		return nil, "", 0, err
	}
	if holder == nil {
		return nil, "", 0, nil
	}
	return nil, *holder, *left, nil
}

// renew extends the lease every third of the TTL until it is released or
// lost.
func (l *lease) renew() {
	defer close(l.done)
	s := l.s
	t := time.NewTicker(s.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		s.closeMu.RLock()
		if s.closed {
			s.closeMu.RUnlock()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.ttl/3)
		tag, err := s.exec(ctx, `UPDATE vigil_leases SET expires = clock_timestamp() + $3 * interval '1 millisecond'
			WHERE session_id = $1 AND holder = $2`, l.id, l.token, s.ttl.Milliseconds())
		cancel()
		s.closeMu.RUnlock()
		switch {
		case err != nil:
			s.log.Warn("renewing a turn lease failed; retrying", "session", l.id, "error", err)
		case tag.RowsAffected() == 0:
			s.log.Error("lost a turn lease: it expired and was taken over", "session", l.id)
			s.forget(l)
			return
		}
	}
}

// forget drops l from the store's held leases.
func (s *Store) forget(l *lease) {
	s.mu.Lock()
	if s.leases[l.id] == l {
		delete(s.leases, l.id)
	}
	s.mu.Unlock()
}

// release stops renewing, deletes the lease and wakes waiters. Errors are
// logged: an undeleted lease expires on its own.
func (l *lease) release() {
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		s := l.s
		s.forget(l)
		s.closeMu.RLock()
		defer s.closeMu.RUnlock()
		if s.closed {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := s.exec(ctx, `WITH d AS (DELETE FROM vigil_leases WHERE session_id = $1 AND holder = $2 RETURNING 1)
			SELECT pg_notify($3, 'l 0 ' || $1) FROM d`, l.id, l.token, s.channel)
		if err != nil {
			s.log.Warn("releasing a turn lease failed; it will expire", "session", l.id, "error", err)
		}
	})
}
