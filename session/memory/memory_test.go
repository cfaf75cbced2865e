package memory_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/memory"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestStoreConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store { return memory.New() })
}

// queueHarness gives the queue's suites (RunQueue, RunDelete) handles on
// one store.
var queueHarness = sessiontest.QueueHarness{
	New: func(t *testing.T) func(t *testing.T) session.Store {
		first := memory.New()
		return func(t *testing.T) session.Store { return first.Handle() }
	},
	Crash: func(t *testing.T, s session.Store) { memory.Crash(s.(*memory.Store)) },
}

func TestQueueConformance(t *testing.T) { sessiontest.RunQueue(t, queueHarness) }

func TestFollowConformance(t *testing.T) {
	sessiontest.RunFollow(t, func(t *testing.T) func(t *testing.T) session.Store {
		first := memory.New()
		return func(t *testing.T) session.Store { return first.Handle() }
	})
}

func TestLeaseIsHeldByAHandle(t *testing.T) {
	ctx := context.Background()
	a := memory.New()
	b := a.Handle()
	require.NoError(t, a.Create(ctx, session.Info{ID: "s1", Version: session.Version}))
	recs := sessiontest.Turn(t, 0, 1)

	release, err := a.Lease(ctx, "s1", false)
	require.NoError(t, err)
	_, err = b.Lease(ctx, "s1", false)
	require.ErrorIs(t, err, session.ErrLocked)
	require.ErrorIs(t, b.Append(ctx, "s1", 0, recs), session.ErrLocked, "another handle does not write a leased session")
	again, err := a.Lease(ctx, "s1", false)
	require.NoError(t, err, "the holder has it again at once")
	require.NoError(t, a.Append(ctx, "s1", 0, recs[:3]))

	got := make(chan error, 1)
	go func() {
		rel, err := b.Lease(ctx, "s1", true)
		if err == nil {
			defer rel()
			err = b.Append(ctx, "s1", 3, recs[3:])
		}
		got <- err
	}()
	release()
	require.NoError(t, <-got, "a waiting lease is taken once released")
	again() // released already: nothing happens
	log, err := a.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Len(t, log.Records, len(recs))

	_, err = a.Lease(ctx, "nope", false)
	require.ErrorIs(t, err, session.ErrNotFound)
	short, cancel := context.WithCancel(ctx)
	cancel()
	rel, err := a.Lease(short, "s1", true)
	require.NoError(t, err, "free: a done context does not matter")
	rel()
}
