package agentloop_test

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// TestSessionsLeaveNoHeap opens 10,000 sessions in one process, with the
// invariants plugin on, gives each two turns and closes it: everything
// any package kept about a session (the invariants trace, the loop's
// caches, the store's writer) goes with its lifetime, so the heap after
// GC stays within 1.2× of what it was after the first 100.
func TestSessionsLeaveNoHeap(t *testing.T) {
	n := 10_000
	if testing.Short() || raceOn {
		n = 2_000 // still twice past any cap a cache of sessions had
	}
	ctx := context.Background()
	l := newBenchLoop(t) // invariants strict, one turn of one step
	store, err := jsonl.Open(memDir(t))
	require.NoError(t, err)
	defer store.Close()
	mgr := live.NewManager(l.root.Context(), store)

	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var base uint64
	for i := range n {
		if i == 100 {
			base = heap()
		}
		sess, err := mgr.Create(ctx)
		require.NoError(t, err)
		l.turn(t, sess)
		l.turn(t, sess)
		require.NoError(t, sess.Close(ctx))
		require.NoError(t, os.Remove(store.Path(sess.ID()))) // the disk is not the heap
	}
	after := heap()
	t.Logf("heap after 100 sessions: %d B, after %d: %d B (%.2f×)", base, n, after, float64(after)/float64(base))
	require.LessOrEqual(t, float64(after), 1.2*float64(base), "heap grew with closed sessions")
}

// memDir is a temporary directory on tmpfs when the machine has one: the
// test measures the heap, and 40,000 fsyncs on a disk would only make it
// slow.
func memDir(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "vigil-test-")
		if err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}
