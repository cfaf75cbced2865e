package jsonl_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// writeLongLog writes the log of session id, n events or a few more of
// tool-calling turns (13 events each), into dir, and returns its size.
func writeLongLog(tb testing.TB, dir, id string, n int) int64 {
	tb.Helper()
	f, err := os.Create(filepath.Join(dir, id+".jsonl"))
	require.NoError(tb, err)
	w := bufio.NewWriterSize(f, 1<<20)
	_, err = w.Write(session.AppendHeaderLine(nil, session.Info{ID: id, Version: session.Version, Created: epoch}))
	require.NoError(tb, err)
	var line []byte
	seq := int64(0)
	add := func(ev session.Event) {
		r, err := session.NewRecord(seq, epoch.Add(time.Duration(seq)*time.Millisecond), ev)
		require.NoError(tb, err)
		line = r.AppendLine(line[:0])
		_, err = w.Write(line)
		require.NoError(tb, err)
		seq++
	}
	for turn := 1; seq < int64(n); turn++ {
		base := seq
		id := fmt.Sprintf("call_%d", turn)
		args := fmt.Sprintf(`{"expression":"%d*2"}`, turn)
		answer := fmt.Sprintf("The answer to question %d is %d, as the tool computed.", turn, turn*2)
		for _, ev := range []session.Event{
			{Type: session.TypeTurnStart, Turn: turn},
			{Type: session.TypeUserMessage, Turn: turn, Data: session.UserMessage{Content: fmt.Sprintf("What is %d times two? Please use the calculator.", turn)}},
			{Type: session.TypeStepStart, Turn: turn, Step: 1},
			{Type: session.TypeAssistantChunk, Turn: turn, Step: 1, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: id, Name: "calc", Arguments: args}}},
			{Type: session.TypeAssistantMessage, Turn: turn, Step: 1, Sources: []int64{base + 3}, Data: session.AssistantMessage{ToolCalls: []session.ToolCall{{ID: id, Name: "calc", Arguments: args}}}},
			{Type: session.TypeToolCall, Turn: turn, Step: 1, Data: session.ToolCall{ID: id, Name: "calc", Arguments: args}},
			{Type: session.TypeToolResult, Turn: turn, Step: 1, Sources: []int64{base + 5}, Data: session.ToolResult{ID: id, Name: "calc", Content: fmt.Sprint(turn * 2)}},
			{Type: session.TypeStepEnd, Turn: turn, Step: 1, Data: session.StepEnd{Finish: session.FinishToolCalls, Usage: &session.Usage{Input: 812, Output: 23}}},
			{Type: session.TypeStepStart, Turn: turn, Step: 2},
			{Type: session.TypeAssistantChunk, Turn: turn, Step: 2, Data: session.AssistantChunk{Text: answer}},
			{Type: session.TypeAssistantMessage, Turn: turn, Step: 2, Sources: []int64{base + 9}, Data: session.AssistantMessage{Content: answer}},
			{Type: session.TypeStepEnd, Turn: turn, Step: 2, Data: session.StepEnd{Finish: session.FinishStop, Usage: &session.Usage{Input: 840, Output: 17}}},
			{Type: session.TypeTurnEnd, Turn: turn, Data: session.TurnEnd{Reason: session.ReasonCompleted}},
		} {
			add(ev)
		}
	}
	require.NoError(tb, w.Flush())
	require.NoError(tb, f.Close())
	fi, err := os.Stat(f.Name())
	require.NoError(tb, err)
	return fi.Size()
}

// plainLine is what a plain reader of the format decodes a line into.
type plainLine struct {
	Seq       int64            `json:"seq"`
	Type      string           `json:"type"`
	Time      time.Time        `json:"time"`
	Turn      int              `json:"turn"`
	Step      int              `json:"step"`
	Surface   *session.Surface `json:"surface"`
	Sources   []int64          `json:"sources"`
	Ignorable bool             `json:"ignorable"`
	Data      json.RawMessage  `json:"data"`
}

// plainPass is the baseline of first-append-x: one bufio.Scanner and
// json.Unmarshal pass over the file, each line into a plainLine.
func plainPass(tb testing.TB, path string) int {
	f, err := os.Open(path)
	require.NoError(tb, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	n := 0
	var keep []plainLine
	for sc.Scan() {
		var l plainLine
		if n > 0 { // line 1 is the header
			require.NoError(tb, json.Unmarshal(sc.Bytes(), &l))
		}
		keep = append(keep, l)
		n++
	}
	require.NoError(tb, sc.Err())
	runtime.KeepAlive(keep)
	return n
}

// BenchmarkOpen opens a long log with the jsonl store (load, validate,
// the live session's fold) and appends one event durably, without the
// invariants plugin. It reports heap-B/event (the heap the open session
// holds, per event), disk-B/event, and first-append-x: the time from
// open to the first durable append over the time of plainPass on the
// same file, measured in the same iteration (cpu-first-append-x: the same
// ratio of the process's CPU time, which other processes on a shared
// machine do not inflate).
func BenchmarkOpen(b *testing.B) {
	for _, n := range []int{1_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			const id = "long"
			size := writeLongLog(b, dir, id, n)
			root := bus.New()
			b.Cleanup(func() { _ = root.Dispose() })
			var (
				openT, plainT time.Duration
				openC, plainC time.Duration
				heap          float64
				events        int
			)
			for b.Loop() {
				b.StopTimer()
				store, err := jsonl.Open(dir)
				require.NoError(b, err)
				m := live.NewManager(root.Context(), store)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()

				t0, c0 := time.Now(), cpuNow()
				s, err := m.Open(ctx, id)
				require.NoError(b, err)
				_, err = s.Append(ctx, session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "and one more"}})
				require.NoError(b, err)
				require.NoError(b, s.Flush(ctx))
				openT, openC = openT+time.Since(t0), openC+cpuNow()-c0

				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				events = s.Len()
				heap += float64(after.HeapAlloc) - float64(before.HeapAlloc)
				runtime.KeepAlive(s)
				require.NoError(b, s.Close(ctx))
				require.NoError(b, store.Close())
				b.StartTimer()

				t1, c1 := time.Now(), cpuNow()
				plainPass(b, filepath.Join(dir, id+".jsonl"))
				plainT, plainC = plainT+time.Since(t1), plainC+cpuNow()-c1
			}
			b.ReportMetric(heap/float64(b.N)/float64(events), "heap-B/event")
			b.ReportMetric(float64(size)/float64(n), "disk-B/event")
			b.ReportMetric(float64(openT)/float64(plainT), "first-append-x")
			b.ReportMetric(float64(openC)/float64(plainC), "cpu-first-append-x")
		})
	}
}
