package invariants_test

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/internal/cputime"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// BenchmarkColdOpen opens a stored log of about 10,000 events with the
// JSONL store and the invariants plugin on, as a process meets a session
// it does not have open: the store reads and decodes the file, the log
// is validated and folded, and the plugin checks it (its trace, on
// session/created). It reports cpu-ns/event, the process's CPU time per
// event of the log (issue 30: at most 2,000).
func BenchmarkColdOpen(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	lb := newLogBuilder(realisticHeader())
	for len(lb.records) < 10_000 {
		lb.realisticTurn()
	}
	root := bus.New()
	b.Cleanup(func() { _ = root.Dispose() })
	_, err := root.Context().Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	require.NoError(b, err)
	store, err := jsonl.Open(dir)
	require.NoError(b, err)
	seeded, err := live.NewManager(root.Context(), store).SeedRecords(ctx, lb.records)
	require.NoError(b, err)
	id, events := seeded.ID(), seeded.Len()
	require.NoError(b, seeded.Close(ctx))
	require.NoError(b, store.Close())

	var cpu int64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		store, err := jsonl.Open(dir) // knows nothing of the file
		require.NoError(b, err)
		mgr := live.NewManager(root.Context(), store)
		runtime.GC() // the setup's garbage is not the open's
		b.StartTimer()
		c0 := cputime.Now()
		s, err := mgr.Open(ctx, id)
		cpu += int64(cputime.Now() - c0)
		require.NoError(b, err)
		b.StopTimer()
		require.NoError(b, s.Close(ctx))
		require.NoError(b, store.Close())
		b.StartTimer()
	}
	fi, err := os.Stat(store.Path(id))
	require.NoError(b, err)
	b.ReportMetric(float64(events), "events")
	b.ReportMetric(float64(fi.Size())/float64(events), "disk-B/event")
	b.ReportMetric(float64(cpu)/float64(b.N)/float64(events), "cpu-ns/event")
}
