package session_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

func TestNewRecordEncodesCanonicalLine(t *testing.T) {
	tests := []struct {
		name string
		seq  int64
		ev   session.Event
		want string
	}{
		{"chunk", 7, session.Event{Type: session.TypeAssistantChunk, Turn: 2, Step: 1, Data: session.AssistantChunk{Text: "Hel"}},
			`{"seq":7,"type":"assistant/chunk","time":"2026-11-29T20:21:24.000Z","turn":2,"step":1,"data":{"text":"Hel"}}`},
		{"nil data is an empty object", 0, session.Event{Type: session.TypeTurnStart, Turn: 1},
			`{"seq":0,"type":"turn/start","time":"2026-11-29T20:21:24.000Z","turn":1,"data":{}}`},
		{"pointer payload", 1, session.Event{Type: session.TypeUserMessage, Data: &session.UserMessage{Content: "hi"}},
			`{"seq":1,"type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{"content":"hi"}}`},
		{"raw payload is compacted", 1, session.Event{Type: session.TypeUserMessage, Data: json.RawMessage(`{ "content" : "hi" }`)},
			`{"seq":1,"type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{"content":"hi"}}`},
		{"raw core payload is encoded again as the encoder writes it", 1, session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1,
			Data: json.RawMessage(`{"Content":"a<b \u0061","id":"c1","name":"","error":{"code":"X"}}`)},
			`{"seq":1,"type":"tool/result","time":"2026-11-29T20:21:24.000Z","turn":1,"step":1,"data":{"id":"c1","content":"a\u003cb a","error":{"code":"X"}}}`},
		{"raw plugin payload keeps its text, compacted", 3, session.Event{Type: "memo/note", Ignorable: true, Data: json.RawMessage(`{"b": "\u0061", "a": 1}`)},
			`{"seq":3,"type":"memo/note","time":"2026-11-29T20:21:24.000Z","ignorable":true,"data":{"b":"\u0061","a":1}}`},
		{"tool result of a delegation names its child", 5, session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{4},
			Data: session.ToolResult{ID: "call_1", Name: "research", Content: "found", Child: &session.ChildRef{ID: "c1", Seq: 9}}},
			`{"seq":5,"type":"tool/result","time":"2026-11-29T20:21:24.000Z","turn":1,"step":1,"sources":[4],"data":{"id":"call_1","name":"research","content":"found","child":{"id":"c1","seq":9}}}`},
		{"replace with sources", 9, session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: 0, End: 3}, Sources: []int64{0, 3}, Data: session.UserMessage{Content: "summary"}},
			`{"seq":9,"type":"user/message","time":"2026-11-29T20:21:24.000Z","surface":{"op":"replace","start":0,"end":3},"sources":[0,3],"data":{"content":"summary"}}`},
		{"explicit append is the default", 2, session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpAppend}, Data: session.UserMessage{Content: "x"}},
			`{"seq":2,"type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{"content":"x"}}`},
		{"ignorable plugin type", 3, session.Event{Type: "memo/note", Ignorable: true, Data: map[string]int{"b": 2, "a": 1}},
			`{"seq":3,"type":"memo/note","time":"2026-11-29T20:21:24.000Z","ignorable":true,"data":{"a":1,"b":2}}`},
		{"request header via encoding/json", 4, session.Event{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: session.Header{Model: "m"}}},
			`{"seq":4,"type":"request/header","time":"2026-11-29T20:21:24.000Z","turn":1,"data":{"reason":"initial","header":{"model":"m"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := session.NewRecord(tt.seq, epoch.Add(300*time.Microsecond), tt.ev)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(r.Bytes()))
			assert.Equal(t, tt.want+"\n", string(r.AppendLine(nil)))
			again, err := session.DecodeRecord(r.Bytes())
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(again.Bytes()), "decoding a canonical line gives it back")
		})
	}
}

func TestNewRecordRefusesBadEvents(t *testing.T) {
	tests := []struct {
		name string
		ev   session.Event
		err  error
	}{
		{"empty type", session.Event{}, session.ErrInvalidEvent},
		{"unknown type", session.Event{Type: "memo/note"}, session.ErrUnknownType},
		{"ignorable core type", session.Event{Type: session.TypeUserMessage, Ignorable: true}, session.ErrInvalidEvent},
		{"turn/start without turn", session.Event{Type: session.TypeTurnStart}, session.ErrInvalidEvent},
		{"turn/end with a step", session.Event{Type: session.TypeTurnEnd, Turn: 1, Step: 1, Data: session.TurnEnd{Reason: "completed"}}, session.ErrInvalidEvent},
		{"chunk without step", session.Event{Type: session.TypeAssistantChunk, Turn: 1}, session.ErrInvalidScope},
		{"request/header without turn", session.Event{Type: session.TypeRequestHeader}, session.ErrInvalidScope},
		{"step without turn", session.Event{Type: "memo/note", Ignorable: true, Step: 1}, session.ErrInvalidEvent},
		{"negative turn", session.Event{Type: session.TypeUserMessage, Turn: -1}, session.ErrInvalidEvent},
		{"end-seed in a turn", session.Event{Type: session.TypeEndSeed, Turn: 1}, session.ErrInvalidEvent},
		{"user message with step", session.Event{Type: session.TypeUserMessage, Turn: 1, Step: 1}, session.ErrInvalidEvent},
		{"source not earlier", session.Event{Type: session.TypeUserMessage, Sources: []int64{5}}, session.ErrInvalidEvent},
		{"negative source", session.Event{Type: session.TypeUserMessage, Sources: []int64{-1}}, session.ErrInvalidEvent},
		{"surface on non-surface event", session.Event{Type: session.TypeTurnStart, Turn: 1, Surface: &session.Surface{Op: session.OpAppend}}, session.ErrInvalidReplace},
		{"unknown surface op", session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: "prepend"}}, session.ErrInvalidReplace},
		{"replace range after the event", session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: 1, End: 5}}, session.ErrInvalidReplace},
		{"append with a range", session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Start: 1, End: 2}}, session.ErrInvalidReplace},
		{"non-JSON payload", session.Event{Type: session.TypeUserMessage, Data: json.RawMessage(`{"content":`)}, session.ErrInvalidPayload},
		{"non-JSON plugin payload", session.Event{Type: "memo/note", Ignorable: true, Data: json.RawMessage(`nope`)}, session.ErrInvalidPayload},
		{"payload not an object", session.Event{Type: session.TypeUserMessage, Data: json.RawMessage(`"hi"`)}, session.ErrInvalidPayload},
		{"mistyped payload field", session.Event{Type: session.TypeUserMessage, Data: json.RawMessage(`{"content":5}`)}, session.ErrInvalidPayload},
		{"payload of another type", session.Event{Type: session.TypeUserMessage, Data: session.AssistantMessage{Content: "x"}}, session.ErrInvalidPayload},
		{"unmarshalable plugin payload", session.Event{Type: "memo/note", Ignorable: true, Data: func() {}}, session.ErrInvalidPayload},
		{"unknown field in a raw core payload", session.Event{Type: session.TypeUserMessage, Data: json.RawMessage(`{"content":"x","colour":1}`)}, session.ErrInvalidPayload},
		{"tool call without id", session.Event{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: session.ToolCall{Name: "x"}}, session.ErrNoCallID},
		{"tool result without id", session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Data: session.ToolResult{}}, session.ErrInvalidPayload},
		{"assistant tool call without name", session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Data: session.AssistantMessage{ToolCalls: []session.ToolCall{{ID: "c"}}}}, session.ErrInvalidPayload},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := session.NewRecord(3, epoch, tt.ev)
			require.ErrorIs(t, err, tt.err)
			require.True(t, r.IsZero())
		})
	}
}

func TestRegisteredTypeNeedsNoIgnorableFlag(t *testing.T) {
	session.RegisterType("test/registered")
	r, err := session.NewRecord(0, epoch, session.Event{Type: "test/registered", Data: []int{1}})
	require.NoError(t, err)
	assert.False(t, r.Ignorable())
	assert.Panics(t, func() { session.RegisterType(session.TypeUserMessage) })
}

func TestRecordIsImmutable(t *testing.T) {
	msg := session.AssistantMessage{Content: "x", ToolCalls: []session.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}}
	sources := []int64{0, 1}
	r, err := session.NewRecord(2, epoch, session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Sources: sources, Data: &msg})
	require.NoError(t, err)
	line := string(r.Bytes())

	// Everything the caller held or was handed can change; the record cannot.
	msg.ToolCalls[0].Name = "changed"
	msg.Content = "changed"
	sources[0] = 1
	r.Sources()[1] = 0
	r.Data()[0] = 'X'
	r.Bytes()[0] = 'X'
	got, err := session.DecodeData[session.AssistantMessage](r)
	require.NoError(t, err)
	got.ToolCalls[0].ID = "changed"
	msgs, err := session.DeriveMessages([]session.Record{r})
	require.NoError(t, err)
	msgs[0].ToolCalls[0].Arguments = "changed"

	assert.Equal(t, line, string(r.Bytes()))
	assert.Equal(t, []int64{0, 1}, r.Sources())
	again, err := session.DecodeData[session.AssistantMessage](r)
	require.NoError(t, err)
	assert.Equal(t, session.AssistantMessage{Content: "x", ToolCalls: []session.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}}, again)
	msgs, err = session.DeriveMessages([]session.Record{r})
	require.NoError(t, err)
	assert.Equal(t, "{}", msgs[0].ToolCalls[0].Arguments)
}

func TestRecordAccessors(t *testing.T) {
	r, err := session.NewRecord(4, epoch.Add(1500*time.Microsecond), session.Event{
		Type: session.TypeToolResult, Turn: 2, Step: 3, Sources: []int64{1},
		Data: session.ToolResult{ID: "c", Content: "ok"},
	})
	require.NoError(t, err)
	assert.Equal(t, int64(4), r.Seq())
	assert.Equal(t, session.TypeToolResult, r.Type())
	assert.Equal(t, epoch.Add(time.Millisecond), r.Time(), "time is truncated to the millisecond")
	assert.Equal(t, 2, r.Turn())
	assert.Equal(t, 3, r.Step())
	assert.True(t, r.IsSurface())
	assert.Equal(t, session.Surface{Op: session.OpAppend}, r.Surface())
	assert.JSONEq(t, `{"id":"c","content":"ok"}`, string(r.Data()))
	assert.False(t, r.Ignorable())

	plain, err := session.NewRecord(0, epoch, session.Event{Type: session.TypeTurnStart, Turn: 1})
	require.NoError(t, err)
	assert.False(t, plain.IsSurface())
	assert.Equal(t, session.Surface{}, plain.Surface())
	assert.Nil(t, plain.Sources())

	// Plugin payloads decode through encoding/json.
	note, err := session.NewRecord(1, epoch, session.Event{Type: "memo/note", Ignorable: true, Data: map[string]string{"k": "v"}})
	require.NoError(t, err)
	m, err := session.DecodeData[map[string]string](note)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k": "v"}, m)
	_, err = session.DecodeData[int](note)
	require.Error(t, err)
}

// TestRecordsWithoutDataDecode: an event appended without data has the
// zero payload of its type, and its line is one the decoder reads back.
func TestRecordsWithoutDataDecode(t *testing.T) {
	for _, typ := range []string{
		session.TypeTurnStart, session.TypeTurnEnd, session.TypeStepStart, session.TypeStepEnd,
		session.TypeUserMessage, session.TypeRequestHeader, session.TypeRequestDigest,
		session.TypeAssistantChunk, session.TypeAssistantMessage, session.TypeCompactionStart,
		session.TypeCompactionEnd, session.TypeEndSeed,
	} {
		t.Run(typ, func(t *testing.T) {
			ev := session.Event{Type: typ, Turn: 1, Step: 1}
			switch typ {
			case session.TypeTurnStart, session.TypeTurnEnd, session.TypeUserMessage, session.TypeRequestHeader:
				ev.Step = 0
			case session.TypeEndSeed:
				ev.Turn, ev.Step = 0, 0
			}
			r, err := session.NewRecord(1, epoch, ev)
			require.NoError(t, err)
			again, err := session.DecodeRecord(r.Bytes())
			require.NoError(t, err, "%s", r)
			assert.Equal(t, string(r.Bytes()), string(again.Bytes()))
		})
	}
	for _, typ := range []string{session.TypeToolCall, session.TypeToolStart, session.TypeToolResult} {
		_, err := session.NewRecord(1, epoch, session.Event{Type: typ, Turn: 1, Step: 1})
		assert.ErrorIs(t, err, session.ErrNoCallID, "a %s needs its call id", typ)
	}
}
