package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestScanEnvelope pins which lines the fast path reads itself, and what
// it reads from them; every other line goes to the field-by-field path.
func TestScanEnvelope(t *testing.T) {
	at := time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)
	const head = `{"seq":7,"type":"turn/start","time":"2026-11-29T20:21:24.000Z"`
	for _, tc := range []struct {
		name, line string
		seq        int64
		ev         Event
		ok         bool
	}{
		{name: "least", line: head + `,"data":{}}`, seq: 7, ev: Event{Type: "turn/start"}, ok: true},
		{name: "every field", line: head + `,"turn":2,"step":-1,"surface":{"op":"replace","start":3,"end":5},"sources":[1,-2,3],"ignorable":true,"data":{"a":1}}`,
			seq: 7, ev: Event{Type: "turn/start", Turn: 2, Step: -1, Surface: &Surface{Op: OpReplace, Start: 3, End: 5}, Sources: []int64{1, -2, 3}, Ignorable: true}, ok: true},
		{name: "negative seq", line: `{"seq":-4,"type":"x","time":"2026-11-29T20:21:24.000Z","data":1}`, seq: -4, ev: Event{Type: "x"}, ok: true},
		{name: "not a record", line: `[1]`},
		{name: "seq not a number", line: `{"seq":"7","type":"x","time":"2026-11-29T20:21:24.000Z","data":{}}`},
		{name: "seq too large", line: `{"seq":99999999999999999999,"type":"x","time":"2026-11-29T20:21:24.000Z","data":{}}`},
		{name: "escaped type", line: `{"seq":7,"type":"a\"b","time":"2026-11-29T20:21:24.000Z","data":{}}`},
		{name: "unterminated type", line: `{"seq":7,"type":"abc`},
		{name: "short time", line: `{"seq":7,"type":"x","time":"2026-11-29T20:21:24Z","data":{}}`},
		{name: "bad time", line: `{"seq":7,"type":"x","time":"2026-13-29T20:21:24.000Z","data":{}}`},
		{name: "turn not a number", line: head + `,"turn":x,"data":{}}`},
		{name: "step out of range", line: head + `,"step":99999999999999999999,"data":{}}`},
		{name: "surface without end", line: head + `,"surface":{"op":"replace","start":3},"data":{}}`},
		{name: "surface unclosed", line: head + `,"surface":{"op":"replace","start":3,"end":5,"data":{}}`},
		{name: "sources unclosed", line: head + `,"sources":[1,2,"data":{}}`},
		{name: "sources empty", line: head + `,"sources":[],"data":{}}`},
		{name: "ignorable false", line: head + `,"ignorable":false,"data":{}}`},
		{name: "fields out of order", line: head + `,"step":1,"turn":2,"data":{}}`},
		{name: "no data", line: head + `}`},
		// The caller's check that the record re-encodes to the line
		// refuses this one.
		{name: "data not closed", line: head + `,"data":{}`, seq: 7, ev: Event{Type: "turn/start"}, ok: true},
		{name: "empty data", line: head + `,"data":}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq, got, ev, ok := scanEnvelope([]byte(tc.line))
			assert.Equal(t, tc.ok, ok)
			if !tc.ok {
				return
			}
			assert.Equal(t, tc.seq, seq)
			assert.True(t, got.Equal(at), "%v", got)
			assert.Equal(t, tc.ev, ev)
		})
	}
}

// BenchmarkScanEnvelope: the fast path on the lines of one tool-calling
// turn's kinds, with and without the optional fields.
func BenchmarkScanEnvelope(b *testing.B) {
	const head = `{"seq":1234,"type":"tool/result","time":"2026-11-29T20:21:24.000Z"`
	lines := [][]byte{
		[]byte(head + `,"turn":12,"step":3,"data":{"id":"c1","content":"a folder"}}`),
		[]byte(head + `,"turn":12,"data":{"content":"hello"}}`),
		[]byte(head + `,"surface":{"op":"replace","start":3,"end":500},"sources":[1,2,3,4],"data":{"content":"summary"}}`),
		[]byte(head + `,"turn":12,"step":3,"ignorable":true,"data":{}}`),
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if _, _, _, ok := scanEnvelope(l); !ok {
				b.Fatal("not read")
			}
		}
	}
}
