package sessiontest

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// FencedStore is a store whose turn leases fence its appends.
type FencedStore interface {
	session.Store
	session.Fencer
}

// FencingHarness gives [RunFencing] stores that share a backing, as the
// stores of several processes would.
type FencingHarness struct {
	// New prepares an empty backing for one subtest and returns how to
	// open a handle on it: each call returns another store (another
	// "process") sharing the backing. The suite closes handles that are
	// io.Closers when the subtest ends.
	New func(t *testing.T) (open func(t *testing.T) FencedStore)
	// Pause makes h a holder paused (or cut off) past the expiry of its
	// lease on id: h stops renewing the lease, and Pause returns once the
	// lease has expired. resume lets h renew again; it returns once h has
	// tried to, and so found the lease lost if another holder took it.
	Pause func(t *testing.T, h FencedStore, id string) (resume func())
}

// RunFencing is the conformance suite of [session.Fencer]: every lease
// has a larger epoch than the leases before it, and an append under an
// older epoch never lands, whatever happened since.
func RunFencing(t *testing.T, h FencingHarness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h FencingHarness, open func() FencedStore)
	}{
		{"OldEpochNeverAppends", testOldEpoch},
		{"PausedHolderIsFencedAndTheNewHolderAppends", testPausedHolder},
		{"EpochsGrowStrictlyAcrossLeases", testEpochsGrow},
		{"ConcurrentLeasesHaveDistinctGrowingEpochs", testConcurrentEpochs},
		{"UnleasedAppendIsRefusedWhileAnotherHoldsTheLease", testUnleased},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			newHandle := h.New(t)
			open := func() FencedStore {
				s := newHandle(t)
				require.NotNil(t, s)
				if cl, ok := s.(io.Closer); ok {
					t.Cleanup(func() { assert.NoError(t, cl.Close()) })
				}
				return s
			}
			c.fn(t, h, open)
		})
	}
}

// fencingSession creates session "f" with one turn and returns its length.
func fencingSession(t *testing.T, s FencedStore) int64 {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("f")))
	recs := Turn(t, 0, 1)
	require.NoError(t, s.Append(ctx, "f", 0, recs))
	return int64(len(recs))
}

// requireLength checks that the stored log of "f" has n records.
func requireLength(t *testing.T, s FencedStore, n int64) {
	t.Helper()
	log, err := s.Load(context.Background(), "f")
	require.NoError(t, err)
	require.Len(t, log.Records, int(n))
}

func lease(t *testing.T, s FencedStore) (release func(), epoch int64) {
	t.Helper()
	release, err := s.Lease(context.Background(), "f", false)
	require.NoError(t, err)
	epoch = s.Epoch("f")
	require.Positive(t, epoch, "a held lease has an epoch")
	return release, epoch
}

func testOldEpoch(t *testing.T, _ FencingHarness, open func() FencedStore) {
	ctx := context.Background()
	a, b := open(), open()
	n := fencingSession(t, a)

	releaseA, e1 := lease(t, a)
	releaseA()
	assert.Zero(t, a.Epoch("f"), "a released lease has no epoch")
	releaseB, e2 := lease(t, b)
	require.Greater(t, e2, e1)

	err := a.AppendFenced(ctx, "f", e1, n, Turn(t, n, 2))
	require.ErrorIs(t, err, session.ErrFenced)
	requireLength(t, a, n)

	more := Turn(t, n, 2)
	require.NoError(t, b.Append(ctx, "f", n, more), "the holder appends")
	require.NoError(t, b.AppendFenced(ctx, "f", e2, n+int64(len(more)), Turn(t, n+int64(len(more)), 3)))
	n = n + 2*int64(len(more))
	releaseB()

	// Nobody holds the lease now: an unleased append would go through,
	// the old epoch still does not.
	err = a.AppendFenced(ctx, "f", e1, n, Turn(t, n, 4))
	require.ErrorIs(t, err, session.ErrFenced)
	requireLength(t, a, n)
}

func testPausedHolder(t *testing.T, h FencingHarness, open func() FencedStore) {
	ctx := context.Background()
	a, b := open(), open()
	n := fencingSession(t, a)

	releaseA, e1 := lease(t, a)
	defer releaseA()
	resume := h.Pause(t, a, "f")
	releaseB, e2 := lease(t, b) // the expired lease is taken over
	require.Greater(t, e2, e1)

	// The paused holder still believes it holds the lease.
	assert.Equal(t, e1, a.Epoch("f"))
	require.ErrorIs(t, a.Append(ctx, "f", n, Turn(t, n, 2)), session.ErrFenced)
	require.ErrorIs(t, a.AppendFenced(ctx, "f", e1, n, Turn(t, n, 2)), session.ErrFenced)
	requireLength(t, b, n)

	more := Turn(t, n, 2)
	require.NoError(t, b.Append(ctx, "f", n, more), "the new holder's appends go through")
	n += int64(len(more))

	// Back from its pause, the old holder finds its lease lost: it keeps
	// refusing appends, also once the new holder is gone, rather than
	// appending without a lease, until it releases what it lost.
	resume()
	require.ErrorIs(t, a.Append(ctx, "f", n, Turn(t, n, 3)), session.ErrFenced)
	releaseB()
	require.ErrorIs(t, a.Append(ctx, "f", n, Turn(t, n, 3)), session.ErrFenced)
	requireLength(t, a, n)

	releaseA()
	assert.Zero(t, a.Epoch("f"))
	require.NoError(t, a.Append(ctx, "f", n, Turn(t, n, 3)), "released, it appends like anyone")
}

func testEpochsGrow(t *testing.T, _ FencingHarness, open func() FencedStore) {
	ctx := context.Background()
	stores := []FencedStore{open(), open(), open()}
	n := fencingSession(t, stores[0])
	assert.Zero(t, stores[0].Epoch("f"), "no lease, no epoch")
	var last int64
	for i := range 7 {
		s := stores[i%len(stores)]
		release, e := lease(t, s)
		require.Greater(t, e, last, "lease %d", i)
		last = e
		// Each holder's appends land under its own epoch.
		recs := Turn(t, n, i+2)
		require.NoError(t, s.Append(ctx, "f", n, recs))
		n += int64(len(recs))
		release()
	}
	requireLength(t, stores[1], n)
}

func testConcurrentEpochs(t *testing.T, _ FencingHarness, open func() FencedStore) {
	ctx := context.Background()
	stores := []FencedStore{open(), open(), open(), open()}
	fencingSession(t, stores[0])
	const rounds = 3
	var mu sync.Mutex
	var order []int64 // epochs in the order their leases were held
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Go(func() {
			for range rounds {
				release, err := s.Lease(ctx, "f", true)
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock() // under the lease: the holders take turns here
				order = append(order, s.Epoch("f"))
				mu.Unlock()
				release()
			}
		})
	}
	wg.Wait()
	require.Len(t, order, rounds*len(stores))
	for i := 1; i < len(order); i++ {
		require.Greater(t, order[i], order[i-1], "epochs in lease order: %v", order)
	}
}

func testUnleased(t *testing.T, _ FencingHarness, open func() FencedStore) {
	ctx := context.Background()
	a, b := open(), open()
	n := fencingSession(t, a)
	release, e := lease(t, a)

	for name, appendB := range map[string]func() error{
		"Append":          func() error { return b.Append(ctx, "f", n, Turn(t, n, 2)) },
		"AppendFenced(0)": func() error { return b.AppendFenced(ctx, "f", 0, n, Turn(t, n, 2)) },
	} {
		err := appendB()
		require.ErrorIs(t, err, session.ErrLocked, name)
		assert.NotErrorIs(t, err, session.ErrFenced, "%s: no lease of b's was superseded", name)
	}
	requireLength(t, a, n)
	recs := Turn(t, n, 2)
	require.NoError(t, a.AppendFenced(ctx, "f", e, n, recs))
	n += int64(len(recs))
	release()
	require.NoError(t, b.Append(ctx, "f", n, Turn(t, n, 3)), "once released, anyone appends")
}
