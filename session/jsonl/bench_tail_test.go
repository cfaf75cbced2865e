package jsonl_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
)

// plainStore hides a store's Tailer: session.LoadTail then loads the
// whole log, as summaries did before stores could read a tail.
type plainStore struct{ session.Store }

// BenchmarkSummary is what a session's summary reads (its length, its
// last turn, its pending approvals) of a small and a large log: through
// the store's Tail ("tail") and from the whole loaded log ("load").
//
//	go test -run XXX -bench Summary -benchmem -benchtime 5x ./session/jsonl/
func BenchmarkSummary(b *testing.B) {
	ctx := context.Background()
	for _, size := range []struct {
		name   string
		events int
	}{{"small", 1_300}, {"large", 300_000}} {
		dir := b.TempDir()
		bytes := writeLongLog(b, dir, "s1", size.events)
		s, err := jsonl.Open(dir)
		require.NoError(b, err)
		b.Cleanup(func() { _ = s.Close() })
		for _, way := range []struct {
			name  string
			store session.Store
		}{{"load", plainStore{s}}, {"tail", s}} {
			b.Run(fmt.Sprintf("%s=%dMB/%s", size.name, bytes>>20, way.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					t, err := session.LoadTail(ctx, way.store, "s1")
					require.NoError(b, err)
					require.Nil(b, session.Suspended(t.Records))
					require.GreaterOrEqual(b, t.Next, int64(size.events))
				}
			})
		}
	}
}
