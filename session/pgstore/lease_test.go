package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// twoStores returns two stores sharing one schema, as two processes
// would, with session "s" created.
func twoStores(t *testing.T, opts ...pgstore.Option) (a, b *pgstore.Store) {
	schema := pgtest.Schema(t)
	a = pgtest.StoreIn(t, schema, append([]pgstore.Option{pgstore.WithHolder("A")}, opts...)...)
	b = pgtest.StoreIn(t, schema, append([]pgstore.Option{pgstore.WithHolder("B")}, opts...)...)
	require.NoError(t, a.Create(context.Background(), session.Info{ID: "s", Created: epoch}))
	return a, b
}

func TestLeaseRefusesASecondHolderAndItsAppends(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	recs := turnRecords(nil, "q", "a", false)

	release, err := a.Lease(ctx, "s", false)
	require.NoError(t, err)
	_, err = b.Lease(ctx, "s", false)
	require.ErrorIs(t, err, pgstore.ErrBusy)
	require.ErrorIs(t, err, session.ErrLocked)
	require.ErrorContains(t, err, "a turn is running in A#")
	// Said once: not "pgstore: lease s: pgstore: session busy: session: locked …: s: …".
	assert.Regexp(t, `^pgstore: session busy: s: a turn is running in A#\S+ \(its lease expires in `, err.Error())
	var le *session.LockError
	require.ErrorAs(t, err, &le, "a waiter can show the holder and the lease's expiry")
	assert.True(t, strings.HasPrefix(le.Holder, "A#"), le.Holder)
	assert.True(t, le.Expires.After(time.Now()) && le.Expires.Before(time.Now().Add(pgstore.DefaultLeaseTTL+time.Second)), "expires %v", le.Expires)

	require.ErrorIs(t, b.Append(ctx, "s", 0, recs[:2]), pgstore.ErrBusy)
	require.NoError(t, a.Append(ctx, "s", 0, recs[:2]), "the holder appends")
	_, err = a.Lease(ctx, "s", false)
	require.ErrorIs(t, err, pgstore.ErrBusy, "a store cannot lease a session twice")

	release()
	release() // idempotent
	require.NoError(t, b.Append(ctx, "s", 2, recs[2:]))
	release, err = b.Lease(ctx, "s", false)
	require.NoError(t, err)
	release()
}

func TestLeaseWaitWakesWhenTheHolderReleases(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	release, err := a.Lease(ctx, "s", false)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		rel, err := b.Lease(ctx, "s", true)
		if err == nil {
			defer rel()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the waiter got the lease while it was held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	release()
	select {
	case err := <-got:
		require.NoError(t, err)
		// The TTL is 30s and the poll 2s: only the notification is this fast.
		require.Less(t, time.Since(start), time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter never got the lease")
	}
}

func TestLeaseOfACrashedHolderIsTakenOverWhenItExpires(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	s := pgtest.StoreIn(t, schema)
	require.NoError(t, s.Create(ctx, session.Info{ID: "s", Created: epoch}))
	// A holder that stopped renewing: its lease runs out in 400ms.
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s.vigil_leases VALUES ('s', 'ghost', clock_timestamp() + interval '400 ms')`,
		pgx.Identifier{schema}.Sanitize()))
	require.NoError(t, err)

	_, err = s.Lease(ctx, "s", false)
	require.ErrorIs(t, err, pgstore.ErrBusy)
	require.ErrorContains(t, err, "ghost")
	start := time.Now()
	release, err := s.Lease(ctx, "s", true)
	require.NoError(t, err)
	defer release()
	require.Greater(t, time.Since(start), 200*time.Millisecond)
	require.Less(t, time.Since(start), 3*time.Second)
}

func TestLeaseIsRenewedWhileHeld(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t, pgstore.WithLeaseTTL(1200*time.Millisecond), pgstore.WithLogger(hclog.New(&hclog.LoggerOptions{Output: os.Stderr})))
	release, err := a.Lease(ctx, "s", false)
	require.NoError(t, err)
	defer release()
	time.Sleep(3 * time.Second) // two and a half TTLs
	_, err = b.Lease(ctx, "s", false)
	require.ErrorIs(t, err, pgstore.ErrBusy)
}

func TestLeaseWaitEndsWithItsContext(t *testing.T) {
	a, b := twoStores(t)
	release, err := a.Lease(context.Background(), "s", false)
	require.NoError(t, err)
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = b.Lease(ctx, "s", true)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "waiting for A#")
}

func TestLeaseOfAnUnknownSessionIsErrNotFound(t *testing.T) {
	s := pgtest.Store(t)
	_, err := s.Lease(context.Background(), "nope", true)
	require.ErrorIs(t, err, session.ErrNotFound)
	_, err = s.Lease(context.Background(), "../x", false)
	require.ErrorIs(t, err, session.ErrInvalidID)
}

func TestCloseReleasesTheLeases(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	_, err := a.Lease(ctx, "s", false)
	require.NoError(t, err)
	require.NoError(t, a.Close())
	release, err := b.Lease(ctx, "s", false)
	require.NoError(t, err)
	release()
}

func TestOpenLeasedReloadsAStaleLiveCopy(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	ma := newManager(t, a)
	stale, err := ma.Open(ctx, "s")
	require.NoError(t, err)
	require.Zero(t, stale.Len())

	// Another process runs a turn meanwhile.
	mb := newManager(t, b)
	sb, done, err := live.OpenLeased(ctx, mb, "s", false)
	require.NoError(t, err)
	require.NoError(t, appendTurn(ctx, sb, "from b", "ok", false))
	require.NoError(t, done(ctx))

	sa, done, err := live.OpenLeased(ctx, ma, "s", false)
	require.NoError(t, err)
	require.NotSame(t, stale, sa)
	require.Equal(t, sb.Len(), sa.Len())
	require.NoError(t, appendTurn(ctx, sa, "from a", "ok", false))
	require.NoError(t, done(ctx))
	log, err := a.Load(ctx, "s")
	require.NoError(t, err)
	requireVerified(t, encode(log.Info, log.Records))
}

func TestOpenLeasedCreatesALeasedSession(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	sess, done, err := live.OpenLeased(ctx, newManager(t, a), "", false)
	require.NoError(t, err)
	_, err = b.Lease(ctx, sess.ID(), false)
	require.ErrorIs(t, err, pgstore.ErrBusy)
	require.NoError(t, done(ctx))
	release, err := b.Lease(ctx, sess.ID(), false)
	require.NoError(t, err)
	release()
}

func TestOpenLeasedBusyLeavesNothingOpen(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	release, err := b.Lease(ctx, "s", false)
	require.NoError(t, err)
	defer release()
	m := newManager(t, a)
	_, _, err = live.OpenLeased(ctx, m, "s", false)
	require.ErrorIs(t, err, pgstore.ErrBusy)
	require.Empty(t, m.Live())
}

func TestOpenLeasedWorksWithoutLeases(t *testing.T) {
	ctx := context.Background()
	m := newManager(t, memory.New())
	sess, done, err := live.OpenLeased(ctx, m, "", false)
	require.NoError(t, err)
	require.NoError(t, appendTurn(ctx, sess, "q", "a", false))
	require.NoError(t, done(ctx))
	again, done, err := live.OpenLeased(ctx, m, sess.ID(), false)
	require.NoError(t, err)
	require.Equal(t, sess.Len(), again.Len())
	require.NoError(t, done(ctx))
}
