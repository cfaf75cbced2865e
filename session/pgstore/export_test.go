package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vigil-run/vigil/session"
)

// PauseLease makes s a holder paused past its lease's expiry: it stops
// renewing its lease on id, and the lease is expired in the database, as
// the TTL passing would. resume renews it once (finding it lost if
// another holder took it meanwhile) and, unless lost, renews it in the
// background again.
func PauseLease(ctx context.Context, s *Store, id string) (resume func() error, err error) {
	l := s.held(id)
	if l == nil {
		return nil, fmt.Errorf("pause %s: no lease held", id)
	}
	l.stopRenewing()
	if _, err := s.exec(ctx, `UPDATE vigil_leases SET expires = clock_timestamp() WHERE session_id = $1 AND holder = $2`, id, l.token); err != nil {
		return nil, err
	}
	return func() error {
		ok, err := l.renewOnce()
		if ok {
			l.startRenewing()
		}
		return err
	}, nil
}

// Crash drops s as a dying process would: its renewals stop and its
// connections close, but its leases stay in the database until they
// expire.
func Crash(s *Store) { s.shutdown(false) }

// Migrations are the schema's versions, for a test that builds an old
// database.
var Migrations = migrations

// SetQueuePoll sets the queue's safety poll (see queuePoll) until t ends.
// Call it before opening t's stores, so that it is restored after they
// are closed.
func SetQueuePoll(t testing.TB, d time.Duration) {
	old := queuePoll
	queuePoll = d
	t.Cleanup(func() { queuePoll = old })
}

// Listen starts s's LISTEN connection for the jobs channel, which must
// not have started yet, and returns once it listens: when it wakes its
// subscribers, as it does each time it starts listening.
func Listen(ctx context.Context, s *Store) error { return listen(ctx, s, topic{'-', ""}) }

// ListenEvents is Listen for the events channel, which followers wait on.
func ListenEvents(ctx context.Context, s *Store) error { return listen(ctx, s, topic{'e', "-"}) }

func listen(ctx context.Context, s *Store, t topic) error {
	wake, unsubscribe, err := s.subscribe(t)
	if err != nil {
		return err
	}
	return awaitWake(ctx, wake, unsubscribe)
}

// awaitWake returns once wake receives, or with ctx's error, and then
// unsubscribes.
func awaitWake(ctx context.Context, wake <-chan struct{}, unsubscribe func()) error {
	defer unsubscribe()
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Channel is the NOTIFY channel of s's schema that appends notify.
func Channel(s *Store) string { return s.channel }

// JobsChannel is the NOTIFY channel of s's schema that jobs, releases
// and cancels notify.
func JobsChannel(s *Store) string { return s.jobsChannel }

// SetPingAfter sets how long a pooled connection may sit idle before it
// is checked, until the test ends.
func SetPingAfter(t interface{ Cleanup(func()) }, d time.Duration) {
	old := pingAfter
	pingAfter = d
	t.Cleanup(func() { pingAfter = old })
}

// Stored reports whether the log of id holds records from seq next on,
// byte for byte: how a retried append whose first try committed is
// recognised.
func Stored(ctx context.Context, s *Store, id string, next int64, records []session.Record) bool {
	return s.stored(ctx, id, next, lines(records))
}

// SetFollowBatch sets how many records a follower reads at once, for
// the test's duration.
func SetFollowBatch(n int) (restore func()) {
	old := followBatch
	followBatch = n
	return func() { followBatch = old }
}

// SetFollowStaged sets how long a follower waits for staged events to be
// made durable (see followStaged) until t ends.
func SetFollowStaged(t testing.TB, d time.Duration) {
	old := followStaged
	followStaged = d
	t.Cleanup(func() { followStaged = old })
}

// SetAffinityGrace sets how long a job is its session's last holder's
// (see affinityGrace) until t ends. Call it before opening t's stores.
func SetAffinityGrace(t testing.TB, d time.Duration) {
	old := affinityGrace
	affinityGrace = d
	t.Cleanup(func() { affinityGrace = old })
}

// Looks are the claim statements s's claims ran, and the soonest lease
// expiries they read.
func Looks(s *Store) (looks, expiryReads uint64) {
	s.mu.Lock()
	f := s.fans[jobsFan]
	s.mu.Unlock()
	if f == nil {
		return 0, 0
	}
	return f.looks.Load(), f.expiryReads.Load()
}

// SetExpiryFresh sets how long a read of the soonest lease expiry holds
// (see expiryFresh) until t ends.
func SetExpiryFresh(t testing.TB, d time.Duration) {
	old := expiryFresh
	expiryFresh = d
	t.Cleanup(func() { expiryFresh = old })
}

// Notified subscribes to the notifications of the jobs enqueued for
// session id on s's jobs channel; wait returns once one has come, when
// s's claims have heard of it too.
func Notified(s *Store, id string) (wait func(context.Context) error, err error) {
	wake, unsubscribe, err := s.subscribe(topic{'q', id})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return awaitWake(ctx, wake, unsubscribe) }, nil
}
