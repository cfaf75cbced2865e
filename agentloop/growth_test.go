package agentloop_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allocPerTurn returns the bytes allocated by one turn of one step on a
// session seeded with about n messages, with the invariants plugin on,
// averaged over a few turns after a first one (which folds the log).
func allocPerTurn(t *testing.T, n int) uint64 {
	t.Helper()
	l := newBenchLoop(t)
	ctx := context.Background()
	sess, err := l.mgr.Seed(ctx, seedEvents(n)...)
	require.NoError(t, err)
	defer sess.Close(ctx)
	l.turn(t, sess)
	const turns = 5
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range turns {
		l.turn(t, sess)
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / turns
}

// A step allocates what its new events need, not a copy of the
// conversation: neither the loop's request nor the invariants plugin's
// check grows with the session.
func TestStepAllocationDoesNotGrowWithTheSession(t *testing.T) {
	small, large := allocPerTurn(t, 100), allocPerTurn(t, 4000)
	t.Logf("bytes per step: %d at 100 messages, %d at 4000", small, large)
	assert.LessOrEqual(t, large, small+small/2, "bytes per step: %d at 100 messages, %d at 4000", small, large)
}
