package session_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// conversation returns n records of alternating user and assistant
// messages with tool calls and results, as a long session would have.
func conversation(tb testing.TB, n int) []session.Record {
	tb.Helper()
	out := make([]session.Record, 0, n)
	add := func(ev session.Event) {
		r, err := session.NewRecord(int64(len(out)), epoch, ev)
		require.NoError(tb, err)
		out = append(out, r)
	}
	for i := 0; len(out) < n; i++ {
		turn := i + 1
		id := fmt.Sprintf("call_%d", i)
		switch i % 3 {
		case 0:
			add(session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "please list the files in the current directory"}})
		case 1:
			add(session.Event{Type: session.TypeAssistantMessage, Turn: turn, Step: 1, Data: session.AssistantMessage{Content: "sure", ToolCalls: []session.ToolCall{{ID: id, Name: "list_dir", Arguments: `{"path":"."}`}}}})
		case 2:
			add(session.Event{Type: session.TypeToolResult, Turn: turn, Step: 1, Data: session.ToolResult{ID: id, Name: "list_dir", Content: "a.txt\nb.txt\nc.txt"}})
		}
	}
	return out
}

func BenchmarkDeriveFresh(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		recs := conversation(b, n)
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := session.DeriveMessages(recs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDeriveIncremental is the cost per appended event of keeping
// the fold up to date (Fold.Add, then Messages), on top of 1k and 10k prior
// events: it must be flat. The fold is rebuilt, outside the timer, after
// every n appended events, so the prior count stays between n and 2n and
// the amortized cost of the fold's slices doubling is counted in full
// (the same share per event at either size).
func BenchmarkDeriveIncremental(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("prior=%d", n), func(b *testing.B) {
			recs := conversation(b, 2*n)
			b.ReportAllocs()
			var f *session.Fold
			i := n
			for b.Loop() {
				if f == nil || i == len(recs) {
					b.StopTimer()
					f = session.NewFold()
					for _, r := range recs[:n] {
						require.NoError(b, f.Add(r))
					}
					i = n
					b.StartTimer()
				}
				if err := f.Add(recs[i]); err != nil {
					b.Fatal(err)
				}
				_ = f.Messages()
				i++
			}
		})
	}
}

// BenchmarkDecode: loading a log of 100 tool-calling turns (1700 records)
// from its bytes, every line checked to be canonical.
func BenchmarkDecode(b *testing.B) {
	var recs []session.Record
	for turn := 1; turn <= 100; turn++ {
		recs = append(recs, sessiontest.Turn(b, int64(len(recs)), turn)...)
	}
	data := session.AppendHeaderLine(nil, session.Info{ID: "s1", Created: time.Unix(0, 0)})
	for _, r := range recs {
		data = r.AppendLine(data)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := session.DecodeBytes(data); err != nil {
			b.Fatal(err)
		}
	}
}
