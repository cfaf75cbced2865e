package session_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// copyCase is a payload with reference fields and a function that writes
// through every one of them.
type copyCase struct {
	ev    session.Event
	data  func() any // a fresh payload value, as the caller holds it
	write func(any)  // writes through every reference of a decoded value
	get   func(session.Record) (any, error)
}

func decodeAs[T any](r session.Record) (any, error) { return session.DecodeData[T](r) }

func copyCases() []copyCase {
	return []copyCase{
		{
			ev: session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 1},
			data: func() any {
				return session.StepEnd{Finish: session.FinishStop, Usage: &session.Usage{Input: 1, Output: 2}}
			},
			write: func(v any) { v.(session.StepEnd).Usage.Input = 99 },
			get:   decodeAs[session.StepEnd],
		},
		{
			ev: session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1},
			data: func() any {
				return session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: "c1", Name: "calc", Arguments: "{"}}
			},
			write: func(v any) { v.(session.AssistantChunk).ToolCall.Name = "forged" },
			get:   decodeAs[session.AssistantChunk],
		},
		{
			ev: session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1},
			data: func() any {
				return session.AssistantMessage{ToolCalls: []session.ToolCall{{ID: "c1", Name: "calc", Arguments: "{}"}}}
			},
			write: func(v any) { v.(session.AssistantMessage).ToolCalls[0].Name = "forged" },
			get:   decodeAs[session.AssistantMessage],
		},
		{
			ev: session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1},
			data: func() any {
				return session.ToolResult{ID: "c1", Error: &session.ToolResultError{Code: "x"}, Child: &session.ChildRef{ID: "s1", Seq: 3}}
			},
			write: func(v any) {
				v.(session.ToolResult).Error.Code = "forged"
				v.(session.ToolResult).Child.Seq = 99
			},
			get: decodeAs[session.ToolResult],
		},
		{
			ev: session.Event{Type: session.TypeRequestHeader, Turn: 1},
			data: func() any {
				temp := 0.5
				return session.RequestHeader{Reason: "start", Header: session.Header{Model: "m", Temperature: &temp, Stop: []string{"x"},
					Tools: []session.ToolSpec{{Name: "calc", Parameters: json.RawMessage(`{"type":"object"}`)}}}}
			},
			write: func(v any) {
				h := v.(session.RequestHeader).Header
				*h.Temperature = 9
				h.Stop[0] = "forged"
				h.Tools[0].Name = "forged"
				h.Tools[0].Parameters[0] = '['
			},
			get: decodeAs[session.RequestHeader],
		},
		{
			ev: session.Event{Type: session.TypeApprovalPolicy},
			data: func() any {
				return session.ApprovalPolicy{By: "p", Default: session.ActionAllow, Rules: []session.ApprovalRule{{Tool: "calc", Action: session.ActionAllow}}}
			},
			write: func(v any) { v.(session.ApprovalPolicy).Rules[0].Tool = "forged" },
			get:   decodeAs[session.ApprovalPolicy],
		},
	}
}

// A payload's references are the caller's before the record is made and
// the decoder's after: writing through them, on either side, changes
// neither the record nor what it decodes to next.
func TestPayloadReferencesAreCopies(t *testing.T) {
	for _, c := range copyCases() {
		t.Run(c.ev.Type, func(t *testing.T) {
			for _, held := range []string{"value", "pointer", "decoded as any"} {
				ev := c.ev
				in := c.data()
				ev.Data = in
				if held == "pointer" {
					p := pointerTo(in)
					ev.Data, in = p, p
				}
				r, err := session.NewRecord(0, time.Unix(0, 0), ev)
				require.NoError(t, err)
				line := r.String()
				if held == "pointer" {
					c.write(deref(in))
				} else {
					c.write(in)
				}
				get := c.get
				if held == "decoded as any" {
					get = decodeAs[any]
				}
				first, err := get(r)
				require.NoError(t, err)
				c.write(first)
				again, err := get(r)
				require.NoError(t, err)
				assert.Equal(t, c.data(), again, held)
				assert.Equal(t, line, r.String(), held)
			}
		})
	}
}

// Decoding a payload without references copies nothing: DecodeData
// hands out the value itself, which shares only immutable strings.
func TestDecodeDataWithoutReferencesDoesNotAllocate(t *testing.T) {
	res, err := session.NewRecord(1, epoch, session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Data: session.ToolResult{ID: "c1", Content: "42"}})
	require.NoError(t, err)
	chunk, err := session.NewRecord(1, epoch, session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Text: "hi"}})
	require.NoError(t, err)
	n := testing.AllocsPerRun(100, func() {
		if v, err := session.DecodeData[session.ToolResult](res); err != nil || v.Content != "42" {
			t.Fatal(v, err)
		}
		if v, err := session.DecodeData[session.AssistantChunk](chunk); err != nil || v.Text != "hi" {
			t.Fatal(v, err)
		}
	})
	assert.Zero(t, n)
}

// pointerTo returns a pointer to a copy of payload v; deref undoes it.
func pointerTo(v any) any {
	switch p := v.(type) {
	case session.StepEnd:
		return &p
	case session.AssistantChunk:
		return &p
	case session.AssistantMessage:
		return &p
	case session.ToolResult:
		return &p
	case session.RequestHeader:
		return &p
	case session.ApprovalPolicy:
		return &p
	}
	panic(fmt.Sprintf("no pointer case for %T", v))
}

func deref(v any) any {
	switch p := v.(type) {
	case *session.StepEnd:
		return *p
	case *session.AssistantChunk:
		return *p
	case *session.AssistantMessage:
		return *p
	case *session.ToolResult:
		return *p
	case *session.RequestHeader:
		return *p
	case *session.ApprovalPolicy:
		return *p
	}
	panic(fmt.Sprintf("no pointer case for %T", v))
}

// The lines of a log's staged records share blocks: each is still
// exactly the line NewRecord encodes for its event, across block ends,
// for short lines and long ones, vetoed (never committed) ones between.
func TestStagedLinesAreExact(t *testing.T) {
	l, err := session.NewLogState(nil)
	require.NoError(t, err)
	t0 := session.LogTime(time.Unix(1700000000, 0))
	var recs []session.Record
	var want []string
	for i := range 600 {
		content := strings.Repeat("x", (i*37)%300)
		if i%97 == 0 {
			content = strings.Repeat("long ", 1000)
		}
		ev := session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: content}}
		if i%10 == 9 {
			// Staged and dropped: its line takes room nobody else gets.
			_, err := l.Stage(t0, &ev)
			require.NoError(t, err)
		}
		staged, err := l.Stage(t0, &ev)
		require.NoError(t, err)
		require.NoError(t, l.Commit(staged))
		rec := staged.Record()
		alone, err := session.NewRecord(rec.Seq(), t0, ev)
		require.NoError(t, err)
		recs = append(recs, rec)
		want = append(want, string(alone.AppendLine(nil)))
	}
	for i, r := range recs {
		require.Equal(t, want[i], string(r.AppendLine(nil)), "seq %d", i)
		require.Equal(t, len(want[i]), r.LineLen())
	}
	for i, r := range recs {
		require.Equal(t, want[i], string(r.AppendLine(nil)), "seq %d", i)
		m, err := session.DecodeData[session.UserMessage](r)
		require.NoError(t, err)
		require.Equal(t, want[i], string(mustRecord(t, r.Seq(), t0, m).AppendLine(nil)))
	}
}

func mustRecord(t *testing.T, seq int64, at time.Time, m session.UserMessage) session.Record {
	t.Helper()
	r, err := session.NewRecord(seq, at, session.Event{Type: session.TypeUserMessage, Data: m})
	require.NoError(t, err)
	return r
}
