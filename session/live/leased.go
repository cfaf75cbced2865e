package live

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/session"
)

// OpenLeased makes session id ready for one turn run under its lease:
//
//  1. when mgr's store is a [session.Leaser] (jsonl, PostgreSQL), it
//     takes the lease (waiting for it with wait; else a busy session is an
//     error wrapping [session.ErrLocked] that names the holder);
//  2. it closes a live copy of the session this manager had (another
//     process may have appended since it was loaded) and opens the
//     session afresh, which repairs a turn that a crashed holder left
//     open — under the lease, so never a turn that is still running.
//
// With id "", it creates a session and leases it at once. done flushes
// and closes the session, then releases the lease; call it when the turn
// is over; the session stays open, parked, for the next turn here (see
// [HotLimits]). Stores without leases (memory) get the same open and
// close, without a lease.
func OpenLeased(ctx context.Context, mgr *Manager, id string, wait bool) (sess *Session, done func(context.Context) error, err error) {
	if id == "" {
		return CreateLeased(ctx, mgr, "", "")
	}
	release := func() {}
	if leaser, ok := mgr.Store().(session.Leaser); ok {
		if release, err = leaser.Lease(ctx, id, wait); err != nil {
			return nil, nil, err
		}
	}
	if sess, err = openFresh(ctx, mgr, id); err != nil {
		release()
		return nil, nil, err
	}
	sess.startBatching()
	return sess, closeThen(sess, release), nil
}

// CreateLeased is [OpenLeased] of a new session that belongs to tenant
// and was made by by (see [Manager.CreateOwned]).
func CreateLeased(ctx context.Context, mgr *Manager, tenant, by string) (sess *Session, done func(context.Context) error, err error) {
	release := func() {}
	if sess, err = mgr.CreateOwned(ctx, tenant, by); err != nil {
		return nil, nil, err
	}
	if leaser, ok := mgr.Store().(session.Leaser); ok {
		// Nobody else knows the id yet: this cannot be busy.
		if release, err = leaser.Lease(ctx, sess.ID(), false); err != nil {
			return nil, nil, errors.Join(err, sess.Close(context.WithoutCancel(ctx)))
		}
	}
	sess.startBatching()
	return sess, closeThen(sess, release), nil
}

// closeThen returns a done function that parks sess (see hot.go), then
// releases.
func closeThen(sess *Session, release func()) func(context.Context) error {
	return func(ctx context.Context) error {
		defer release()
		return sess.m.park(ctx, sess)
	}
}

// OpenHeld is [OpenLeased] for a caller that holds session id's lease
// already (a worker's claim on a queued job, [session.Queue]): it opens
// the session afresh, repairing what a crashed holder left open (or
// reuses the copy parked here when it is current), and done flushes and
// parks it, leaving the lease to the caller.
func OpenHeld(ctx context.Context, mgr *Manager, id string) (sess *Session, done func(context.Context) error, err error) {
	if sess, err = openFresh(ctx, mgr, id); err != nil {
		return nil, nil, err
	}
	sess.startBatching()
	return sess, func(ctx context.Context) error { return mgr.park(ctx, sess) }, nil
}

// openFresh returns the session id as the store holds it, for a caller
// that holds its lease: the copy parked here when it is current (see
// hot.go); else, after closing the live copy this manager had (another
// process may have appended since it was loaded), the log opened again.
func openFresh(ctx context.Context, mgr *Manager, id string) (*Session, error) {
	if live, ok := mgr.Get(id); ok {
		if mgr.take(live) {
			if cur, err := mgr.current(ctx, live); err == nil && cur {
				return live, nil
			}
			// Flushed and let go when parked: closing it must not
			// release the store's hold, which is the caller's lease now.
			live.retire()
		} else if err := live.Close(ctx); err != nil {
			return nil, fmt.Errorf("session: close the stale copy of %s: %w", id, err)
		}
	}
	return mgr.Open(ctx, id)
}
