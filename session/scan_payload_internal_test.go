package session

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanTexts are strings that exercise every escape the encoder writes.
var scanTexts = []string{"", "plain", "a \"quoted\" \\ path", "line\nbreak\ttab\r\b\f", "<b> & </b>", "\x00\x1f\x7f", "\u2028\u2029", "\uFFFD", "caf\u00e9 😀"}

// scanSamples returns a record of every core type the scanners read, for
// each of scanTexts in each of its text fields (a valid value elsewhere).
func scanSamples(t testing.TB) []Record {
	var out []Record
	add := func(typ string, turn, step int, data any) {
		r, err := NewRecord(9, time.Date(2026, 11, 29, 20, 21, 24, 123e6, time.UTC), Event{Type: typ, Turn: turn, Step: step, Data: data})
		require.NoError(t, err, "%s %+v", typ, data)
		out = append(out, r)
	}
	for _, s := range scanTexts {
		add(TypeTurnStart, 1, 0, TurnStart{Continues: 3, By: s})
		add(TypeTurnStart, 1, 0, TurnStart{})
		add(TypeTurnEnd, 1, 0, TurnEnd{Reason: s, Error: s})
		add(TypeStepStart, 1, 1, StepStart{})
		add(TypeEndSeed, 0, 0, EndSeed{})
		add(TypeStepEnd, 1, 1, StepEnd{Finish: s, Usage: &Usage{Input: 812, Output: -3}})
		add(TypeStepEnd, 1, 1, StepEnd{})
		add(TypeUserMessage, 0, 0, UserMessage{Content: s, Origin: s})
		add(TypeRequestDigest, 1, 1, Digest{SHA256: s, Messages: 12})
		add(TypeRequestUsage, 0, 0, Usage{Input: 1 << 40, Output: 0})
		add(TypeStepUsage, 1, 1, Usage{Input: 5, Output: 6})
		add(TypeAssistantChunk, 1, 1, AssistantChunk{Text: s, Reasoning: s})
		add(TypeAssistantChunk, 1, 1, AssistantChunk{ToolCall: &ChunkToolCall{Index: 2, ID: "c" + s, Name: s, Arguments: s}})
		add(TypeAssistantChunk, 1, 1, AssistantChunk{ToolCall: &ChunkToolCall{}})
		add(TypeAssistantMessage, 1, 1, AssistantMessage{Content: s, Reasoning: s, ToolCalls: []ToolCall{{ID: "a" + s, Name: "n" + s, Arguments: s}, {ID: "b", Name: "m", Arguments: "{}"}}})
		add(TypeAssistantMessage, 1, 1, AssistantMessage{})
		add(TypeToolCall, 1, 1, ToolCall{ID: "c" + s, Name: "n" + s, Arguments: s})
		add(TypeToolStart, 1, 1, ToolStart{ID: "c" + s})
		add(TypeToolResult, 1, 1, ToolResult{ID: "c" + s, Name: s, Content: s, Error: &ToolResultError{Code: s, Message: s}, Child: &ChildRef{ID: "k" + s, Seq: 7, Root: s}})
		add(TypeToolResult, 1, 1, ToolResult{ID: "c", Child: &ChildRef{Seq: -1}})
		add(TypeCompactionStart, 0, 0, Compaction{ID: s})
		add(TypeCompactionEnd, 0, 0, Compaction{ID: s})
		add(TypeApprovalRequest, 1, 1, ApprovalRequest{ID: "c" + s, By: s, Reason: s})
		add(TypeApprovalDecision, 1, 1, ApprovalDecision{ID: "c" + s, Allow: true, By: s, Reason: s, Scope: ScopeCall, Cites: 4})
		add(TypeApprovalDecision, 1, 1, ApprovalDecision{ID: "c", Scope: ScopeSession})
	}
	return out
}

// TestScanPayload: the scanners read every payload the encoder writes to
// what it was made of, and leave to encoding/json what they do not read
// (forms the encoder never writes, which the comparison then refuses).
func TestScanPayload(t *testing.T) {
	for _, r := range scanSamples(t) {
		p, ok := scanPayload(coreKinds[r.typ], r.data())
		if assert.True(t, ok, "%s", r) {
			assert.Equal(t, r.payload, p, "%s", r)
		}
	}
	for _, tc := range []struct{ typ, data string }{
		{TypeUserMessage, `{"content":"a\/b"}`},                 // an escape the encoder never writes
		{TypeUserMessage, `{"content":"\ud83d\ude00"}`},         // a surrogate pair
		{TypeUserMessage, `{"content":"\u00E9"}`},               // upper-case hex
		{TypeUserMessage, `{"content":"x"`},                     // unclosed
		{TypeUserMessage, `{"content":"x"} `},                   // trailing data
		{TypeUserMessage, `{"content":1}`},                      // not a string
		{TypeUserMessage, `{"origin":"x","content":"y"}`},       // out of order
		{TypeTurnStart, `{"continues":1e3}`},                    // not an integer
		{TypeTurnStart, `{"continues":99999999999999999999}`},   // out of range
		{TypeApprovalDecision, `{"id":"c","allow":yes}`},        // not a boolean
		{TypeAssistantMessage, `{"tool_calls":[{"id":"a"}]}`},   // a call without its name
		{TypeRequestHeader, `{"reason":"initial","header":{}}`}, // encoded by encoding/json
	} {
		_, ok := scanPayload(coreKinds[tc.typ], []byte(tc.data))
		assert.False(t, ok, "%s %s", tc.typ, tc.data)
	}
}

// TestParseTimeText: the log's times are read as time.Parse reads them,
// out-of-range fields refused.
func TestParseTimeText(t *testing.T) {
	for _, s := range []string{"2026-11-29T20:21:24.123Z", "0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "2024-02-29T12:00:00.000Z", "1969-12-31T23:59:59.999Z", "2000-03-01T00:00:00.000Z"} {
		want, err := time.Parse(timeLayout, s)
		require.NoError(t, err)
		got, ok := parseTimeText([]byte(s))
		assert.True(t, ok, s)
		assert.True(t, want.Equal(got), "%s: %v", s, got)
		assert.Equal(t, s, got.Format(timeLayout))
	}
	for _, s := range []string{"2026-13-29T20:21:24.000Z", "2026-00-29T20:21:24.000Z", "2026-04-31T20:21:24.000Z", "2023-02-29T20:21:24.000Z", "1900-02-29T00:00:00.000Z",
		"2026-11-29T24:00:00.000Z", "2026-11-29T20:60:24.000Z", "2026-11-29T20:21:60.000Z", "2026-11-29 20:21:24.000Z", "2026-11-29T20:21:24.000+", "2026-11-29T20:21:2x.000Z", "2026-11-29T20:21:24.00Z"} {
		_, ok := parseTimeText([]byte(s))
		assert.False(t, ok, s)
	}
	// Every month's first and last day of every year the format holds.
	for y := 0; y <= 9999; y++ {
		for m := 1; m <= 12; m++ {
			for _, d := range []int{1, daysIn(m, y)} {
				want := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
				if want.Day() != d || daysSinceEpoch(y, m, d)*86400 != want.Unix() {
					t.Fatalf("%04d-%02d-%02d: %d days, want %d", y, m, d, daysSinceEpoch(y, m, d), want.Unix()/86400)
				}
			}
		}
	}
}

// fastRecord is the fast path of decodeLine alone: the record of line
// (with its newline), read in place, or false.
func fastRecord(line []byte) (Record, bool) {
	seq, t, ev, ok := scanEnvelope(line[:len(line)-1])
	if !ok {
		return Record{}, false
	}
	r := new(record)
	if r.build(seq, t, &ev, nil, textRule{line: line}) != nil {
		return Record{}, false
	}
	return Record{r}, true
}

// sameRecord reports how a and b differ, "" when they are the same record.
func sameRecord(a, b Record) string {
	x, y := *a.record, *b.record
	if !bytes.Equal(x.line, y.line) {
		return fmt.Sprintf("lines %q and %q", x.line, y.line)
	}
	if !reflect.DeepEqual(x.payload, y.payload) {
		return fmt.Sprintf("payloads %#v and %#v", x.payload, y.payload)
	}
	x.line, y.line, x.payload, y.payload = nil, nil, nil, nil
	if !reflect.DeepEqual(x, y) {
		return fmt.Sprintf("records %+v and %+v", x, y)
	}
	return ""
}

// FuzzScanRecord: the fast path of the decoder (the envelope and payload
// scanners, the record read in place) reads a line to the very record the
// strict decoder reads, or leaves it to it; and DecodeRecord, which tries
// it first, reads the same record as the strict decoder or refuses as it
// does. A payload the scanners read and that re-encodes to itself is what
// the strict payload decoder reads from it.
func FuzzScanRecord(f *testing.F) {
	for _, r := range scanSamples(f) {
		f.Add(r.Bytes())
	}
	for _, l := range []string{
		`{"seq":9,"type":"user/message","time":"2026-11-29T20:21:24.123Z","data":{"content":"a\/b"}}`,
		`{"seq":9,"type":"user/message","time":"2026-11-29T20:21:24.123Z","data":{"content":"\ufffd"}}`,
		`{"seq":9,"type":"user/message","time":"2026-11-29T20:21:24.123Z","data":{"content":"x","content":"y"}}`,
		`{"seq":9,"type":"user/message","time":"2026-11-29T20:21:24.123Z","data":{"content":"x"},"data":{}}`,
		`{"seq":9,"type":"tool/result","time":"2026-11-29T20:21:24.123Z","turn":1,"step":1,"surface":{"op":"replace","start":1,"end":2},"sources":[3],"data":{"id":"c"}}`,
		`{"seq":9,"type":"x/y","time":"2026-11-29T20:21:24.123Z","ignorable":true,"data":{"a": 1}}`,
		`{"seq":9,"type":"request/header","time":"2026-11-29T20:21:24.123Z","turn":1,"data":{"reason":"initial","header":{"model":"m"}}}`,
	} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		strict, serr := decodeRecordSlow(line)
		own := append(slices.Clip(line), '\n')
		if fast, ok := fastRecord(slices.Clone(own)); ok {
			if serr != nil {
				t.Fatalf("the fast path read %q, which the strict decoder refuses: %v", line, serr)
			}
			if d := sameRecord(fast, strict); d != "" {
				t.Fatalf("the fast path read %q otherwise: %s", line, d)
			}
		}
		got, err := DecodeRecord(line)
		if (err == nil) != (serr == nil) {
			t.Fatalf("DecodeRecord(%q): %v; the strict decoder: %v", line, err, serr)
		}
		if err == nil {
			if d := sameRecord(got, strict); d != "" {
				t.Fatalf("DecodeRecord read %q otherwise: %s", line, d)
			}
		}
		fuzzScanPayload(t, line)
	})
}

// fuzzScanPayload checks the payload scanner alone on the data of line,
// whatever else the line holds.
func fuzzScanPayload(t *testing.T, line []byte) {
	i := bytes.Index(line, []byte(`"data":`))
	if i < 0 || len(line) < i+8 {
		return
	}
	data := line[i+len(`"data":`) : len(line)-1]
	for _, k := range coreKinds {
		p, ok := scanPayload(k, data)
		if !ok {
			continue
		}
		if enc, byHand := appendPayload(nil, p); !byHand || !bytes.Equal(enc, data) {
			continue // the comparison refuses it
		}
		want, err := k.decode(data)
		if err != nil {
			t.Fatalf("scanned %s %q, which the strict decoder refuses: %v", k.name, data, err)
		}
		if !reflect.DeepEqual(p, want) {
			t.Fatalf("scanned %s %q to %#v, the strict decoder to %#v", k.name, data, p, want)
		}
	}
}
