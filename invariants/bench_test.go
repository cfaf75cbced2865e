package invariants_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// benchRequest builds a log of the benchmark shape holding about messages
// messages, opens one more step, and returns its records and the request
// the loop would send for that step.
func benchRequest(tb testing.TB, messages int) ([]session.Record, *agentloop.Request) {
	b := newLogBuilder(realisticHeader())
	for b.fold != nil && len(b.fold.Messages()) < messages-1 {
		b.realisticTurn()
	}
	b.turn++
	b.add(session.Event{Type: session.TypeTurnStart, Turn: b.turn, Data: session.TurnStart{}})
	b.add(session.Event{Type: session.TypeUserMessage, Turn: b.turn, Data: session.UserMessage{Content: "one more question"}})
	msgs := session.CloneMessages(b.fold.Messages())
	start := b.add(session.Event{Type: session.TypeStepStart, Turn: b.turn, Step: 1, Data: session.StepStart{}})
	req := &agentloop.Request{Session: "bench", Turn: b.turn, Step: 1, StepStart: start.Seq(), Header: session.CloneHeader(b.header), Messages: session.NewMessages(msgs)}
	if v := invariants.CheckRequest(b.records, req); v != nil {
		tb.Fatalf("benchmark request does not pass: %s", v)
	}
	return b.records, req
}

// BenchmarkCheckRequest is the full request check: a fresh fold of the
// log prefix, the message comparison and the header comparison.
func BenchmarkCheckRequest(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			records, req := benchRequest(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if v := invariants.CheckRequest(records, req); v != nil {
					b.Fatal(v)
				}
			}
		})
	}
}

// BenchmarkCheckRequestJSONBaseline does the same check the way the anchor
// implementation does: fold, then compare both sides encoded as JSON.
func BenchmarkCheckRequestJSONBaseline(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			records, req := benchRequest(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				want, err := session.DeriveMessages(records[:req.StepStart])
				if err != nil {
					b.Fatal(err)
				}
				h, _ := session.DeriveHeader(records)
				x, _ := json.Marshal(struct {
					H session.Header
					M []session.Message
				}{h, want})
				y, _ := json.Marshal(struct {
					H session.Header
					M []session.Message
				}{req.Header, req.Messages.Clone()})
				if !bytes.Equal(x, y) {
					b.Fatal("differs")
				}
			}
		})
	}
}

// BenchmarkCompareOnly is the comparison pass alone (no fold): it must
// not allocate.
func BenchmarkCompareOnly(b *testing.B) {
	records, req := benchRequest(b, 1000)
	want, err := session.DeriveMessages(records[:req.StepStart])
	if err != nil {
		b.Fatal(err)
	}
	h, _ := session.DeriveHeader(records)
	b.ReportAllocs()
	for b.Loop() {
		if v := invariants.CompareRequest(want, h, req); v != nil {
			b.Fatal(v)
		}
	}
}

// BenchmarkReplay runs the append rules and the plugin's own fold over a
// log of about 1000 messages, record by record, as the plugin does when
// it meets a session: divided by the records, what it pays for each
// append, plus its share of growing the trace.
func BenchmarkReplay(b *testing.B) {
	records, _ := benchRequest(b, 1000)
	b.Run(fmt.Sprintf("records=%d", len(records)), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if v := invariants.Replay(records); v != nil {
				b.Fatal(v)
			}
		}
	})
}
