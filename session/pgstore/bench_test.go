package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// The batches of BenchmarkAppendJSONL (session/jsonl/bench_test.go): 63
// chunks and the step/end that closes their step, appended one event at a
// time through a session; the step/end append returns once it is durable.
// Run both in one go:
//
//	go test -run '^$' -bench 'AppendJSONL$|AppendPostgres' ./session/jsonl ./session/pgstore
const (
	batch      = 64
	perSession = 10 * batch * 16 // events per session before starting another
)

func batchEvents() []session.Event {
	evs := make([]session.Event, batch)
	for i := range batch - 1 {
		evs[i] = session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Text: "Hel"}}
	}
	evs[batch-1] = session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 1, Data: session.StepEnd{Finish: session.FinishStop}}
	return evs
}

func benchAppend(b *testing.B, evs []session.Event, opts ...pgstore.Option) {
	ctx := context.Background()
	store := pgtest.Store(b, opts...)
	root := bus.New()
	b.Cleanup(func() { _ = root.Dispose() })
	m := live.NewManager(root.Context(), store)
	var s *live.Session
	var err error
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%perSession == 0 {
			b.StopTimer()
			if s != nil {
				require.NoError(b, s.Close(ctx))
			}
			s, err = m.Create(ctx)
			require.NoError(b, err)
			b.StartTimer()
		}
		if _, err := s.Append(ctx, evs[i%len(evs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppendPostgres: one statement per event; chunks commit
// asynchronously, the step/end synchronously (WAL flushed). One op is one
// event.
func BenchmarkAppendPostgres(b *testing.B) { benchAppend(b, batchEvents()) }

// BenchmarkAppendPostgresDurable: every event commits synchronously.
func BenchmarkAppendPostgresDurable(b *testing.B) {
	benchAppend(b, batchEvents(), pgstore.WithDurableAppends())
}

// BenchmarkAppendPostgresNoFlush appends chunks only, which never wait
// for the WAL: the cost of the statement itself.
func BenchmarkAppendPostgresNoFlush(b *testing.B) { benchAppend(b, batchEvents()[:batch-1]) }

// BenchmarkAppendPostgresBatch appends the same 64 events as one batch per
// store call (as a fork, seed or import does). One op is one event.
func BenchmarkAppendPostgresBatch(b *testing.B) {
	ctx := context.Background()
	store := pgtest.Store(b)
	var recs []session.Record
	for i, ev := range batchEvents() {
		r, err := session.NewRecord(int64(i), epoch, ev)
		require.NoError(b, err)
		recs = append(recs, r)
	}
	b.ReportAllocs()
	n, sessions := 0, 0
	var id string
	var next int64
	for b.Loop() {
		if n%perSession == 0 {
			sessions++
			id = "b" + string(rune('a'+sessions%26)) + itoa(sessions)
			require.NoError(b, store.Create(ctx, session.Info{ID: id, Created: epoch}))
			next = 0
		}
		// Re-seq the batch: records are immutable, so make them anew.
		batchRecs := make([]session.Record, batch)
		for j, r := range recs {
			nr, err := session.NewRecord(next+int64(j), epoch, session.Event{Type: r.Type(), Turn: r.Turn(), Step: r.Step(), Data: r.Data()})
			if err != nil {
				b.Fatal(err)
			}
			batchRecs[j] = nr
		}
		if err := store.Append(ctx, id, next, batchRecs); err != nil {
			b.Fatal(err)
		}
		next += batch
		n += batch
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}
