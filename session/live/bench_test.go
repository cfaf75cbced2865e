package live_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// BenchmarkAppend is the in-memory append path: encode, validate, the
// two-phase dispatch (with no listeners), the memory store, the fold. A
// fresh session is started every 10k events (outside the timer), the size
// of a long conversation, so the figure is not the cost of growing one
// million-event log and of the collector scanning it.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	const perSession = 10000
	root := bus.New()
	b.Cleanup(func() { _ = root.Dispose() })
	var s *live.Session
	ev := session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Text: "Hel"}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%perSession == 0 {
			b.StopTimer()
			if s != nil {
				require.NoError(b, s.Close(ctx))
			}
			var err error
			s, err = live.NewManager(root.Context(), memory.New()).Create(ctx)
			require.NoError(b, err)
			b.StartTimer()
		}
		if _, err := s.Append(ctx, ev); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
