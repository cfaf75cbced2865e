//go:build unix

package jsonl_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// BenchmarkDurableAppendHashed is one step through a session to the
// jsonl store (a step/start, and a step/end that returns after its
// fsync), without and with the leaf hashes and compact-range updates a
// signing session adds for them; cpu-ns/op is the process's CPU time.
func BenchmarkDurableAppendHashed(b *testing.B) {
	for _, hashed := range []bool{false, true} {
		name := "plain"
		if hashed {
			name = "hashed"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			store, err := jsonl.Open(b.TempDir())
			require.NoError(b, err)
			b.Cleanup(func() { _ = store.Close() })
			root := bus.New()
			b.Cleanup(func() { _ = root.Dispose() })
			s, err := live.NewManager(root.Context(), store).Create(ctx)
			require.NoError(b, err)
			_, err = s.Append(ctx, session.Event{Type: session.TypeTurnStart, Turn: 1, Data: session.TurnStart{}})
			require.NoError(b, err)
			var tree session.MerkleTree
			step := 0
			start := cpuNow()
			for b.Loop() {
				step++
				r1, err := s.Append(ctx, session.Event{Type: session.TypeStepStart, Turn: 1, Step: step, Data: session.StepStart{}})
				if err != nil {
					b.Fatal(err)
				}
				r2, err := s.Append(ctx, session.Event{Type: session.TypeStepEnd, Turn: 1, Step: step, Data: session.StepEnd{Finish: session.FinishStop}})
				if err != nil {
					b.Fatal(err)
				}
				if hashed {
					tree.AddRecord(r1)
					tree.AddRecord(r2)
				}
			}
			b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
