package jsonl_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// batch is the group size of both benchmarks below: 63 chunks and the
// step/end that closes their step, which the store fsyncs before the
// append returns.
const batch = 64

const perSession = 10 * batch * 16 // events per file before starting another

var epoch = time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)

func batchEvents() []session.Event {
	evs := make([]session.Event, batch)
	for i := range batch - 1 {
		evs[i] = session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Text: "Hel"}}
	}
	evs[batch-1] = session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 1, Data: session.StepEnd{Finish: session.FinishStop}}
	return evs
}

// BenchmarkAppendJSONL appends through a session to the jsonl store:
// durable group commit, one write and one fsync per batch of 64 events
// (the step/end append returns after its fsync). One op is one event.
func BenchmarkAppendJSONL(b *testing.B) {
	ctx := context.Background()
	store, err := jsonl.Open(b.TempDir())
	require.NoError(b, err)
	b.Cleanup(func() { _ = store.Close() })
	root := bus.New()
	b.Cleanup(func() { _ = root.Dispose() })
	m := live.NewManager(root.Context(), store)
	evs := batchEvents()
	var s *live.Session
	b.ReportAllocs()
	b.SetBytes(int64(lineLen(b)))
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
		if _, err := s.Append(ctx, evs[i%batch]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// lineLen is the mean length of a line of one batch.
func lineLen(tb testing.TB) int {
	n := 0
	for _, r := range batchRecords(tb) {
		n += r.LineLen()
	}
	return n / batch
}

func batchRecords(tb testing.TB) []session.Record {
	evs := batchEvents()
	recs := make([]session.Record, batch)
	for i, ev := range evs {
		r, err := session.NewRecord(int64(i), epoch, ev)
		require.NoError(tb, err)
		recs[i] = r
	}
	return recs
}

// BenchmarkFsyncBaseline writes the same bytes as BenchmarkAppendJSONL,
// batch by batch, with a plain write and fsync per batch of the same size
// and no encoding, session or store at all. One op is one event.
func BenchmarkFsyncBaseline(b *testing.B) {
	dir := b.TempDir()
	var data []byte
	for _, r := range batchRecords(b) {
		data = r.AppendLine(data)
	}
	var f *os.File
	b.SetBytes(int64(len(data) / batch))
	i := 0
	for b.Loop() {
		if i%perSession == 0 {
			b.StopTimer()
			if f != nil {
				require.NoError(b, f.Close())
			}
			var err error
			f, err = os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d.jsonl", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			require.NoError(b, err)
			b.StartTimer()
		}
		if i%batch == batch-1 {
			if _, err := f.Write(data); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
	b.StopTimer()
	require.NoError(b, f.Close())
}

// BenchmarkJSONLVersusFsync interleaves the two benchmarks above, batch by
// batch, so that both see the same disk and the same background load; it
// reports each one's time per event and the jsonl throughput as a share
// of the baseline's. One op is one batch of each.
func BenchmarkJSONLVersusFsync(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	store, err := jsonl.Open(filepath.Join(dir, "store"))
	require.NoError(b, err)
	b.Cleanup(func() { _ = store.Close() })
	root := bus.New()
	b.Cleanup(func() { _ = root.Dispose() })
	m := live.NewManager(root.Context(), store)
	evs := batchEvents()
	var data []byte
	for _, r := range batchRecords(b) {
		data = r.AppendLine(data)
	}
	var (
		s                *live.Session
		f                *os.File
		jsonlT, baseT    time.Duration
		batches, session int
	)
	for b.Loop() {
		if batches%(perSession/batch) == 0 {
			b.StopTimer()
			if s != nil {
				require.NoError(b, s.Close(ctx))
				require.NoError(b, f.Close())
			}
			s, err = m.Create(ctx)
			require.NoError(b, err)
			session++
			f, err = os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d.jsonl", session)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			require.NoError(b, err)
			b.StartTimer()
		}
		// Alternate which goes first, so neither always pays for the
		// other's journal commit.
		t0 := time.Now()
		if batches%2 == 0 {
			if _, err := f.Write(data); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for _, ev := range evs {
			if _, err := s.Append(ctx, ev); err != nil {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		if batches%2 == 1 {
			if _, err := f.Write(data); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		baseT += t1.Sub(t0) + time.Since(t2)
		jsonlT += t2.Sub(t1)
		batches++
	}
	b.StopTimer()
	require.NoError(b, f.Close())
	events := float64(batches * batch)
	b.ReportMetric(float64(jsonlT.Nanoseconds())/events, "jsonl-ns/event")
	b.ReportMetric(float64(baseT.Nanoseconds())/events, "fsync-ns/event")
	b.ReportMetric(100*float64(baseT)/float64(jsonlT), "jsonl-throughput-%")
}
