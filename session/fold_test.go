package session_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// records makes a log of events, seqs from 0.
func records(t testing.TB, evs ...session.Event) []session.Record {
	t.Helper()
	return sessiontest.Records(t, epoch, evs...)
}

func TestDeriveMessagesProjectsEachSurfaceEvent(t *testing.T) {
	call := session.ToolCall{ID: "c1", Name: "f", Arguments: `{"x":1}`}
	tests := []struct {
		name string
		evs  []session.Event
		want []session.Message
	}{
		{"empty log", nil, []session.Message{}},
		{"user", []session.Event{user("hi")}, []session.Message{{Role: "user", Content: "hi"}}},
		{"assistant with reasoning and calls", []session.Event{
			{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Data: session.AssistantMessage{Content: "ok", Reasoning: "hmm", ToolCalls: []session.ToolCall{call}}},
		}, []session.Message{{Role: "assistant", Content: "ok", Reasoning: "hmm", ToolCalls: []session.ToolCall{call}}}},
		{"empty assistant projects to nothing", []session.Event{user("hi"), assistant(""),
			{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Data: session.AssistantMessage{Reasoning: "only thoughts"}}},
			[]session.Message{{Role: "user", Content: "hi"}}},
		{"tool result", []session.Event{result("c1", "42")}, []session.Message{{Role: "tool", Content: "42", ToolCallID: "c1", Name: "f"}}},
		{"tool error shows its code", []session.Event{
			{Type: session.TypeToolResult, Turn: 1, Step: 1, Data: session.ToolResult{ID: "c1", Name: "f", Error: &session.ToolResultError{Code: "E", Message: "boom"}}},
			{Type: session.TypeToolResult, Turn: 1, Step: 1, Data: session.ToolResult{ID: "c2", Error: &session.ToolResultError{Code: "E"}}},
			{Type: session.TypeToolResult, Turn: 1, Step: 1, Data: session.ToolResult{ID: "c3", Content: "partial", Error: &session.ToolResultError{Code: "E"}}},
		}, []session.Message{
			{Role: "tool", Content: "error E: boom", ToolCallID: "c1", Name: "f"},
			{Role: "tool", Content: "error E", ToolCallID: "c2"},
			{Role: "tool", Content: "partial", ToolCallID: "c3"},
		}},
		{"non-surface events change nothing", []session.Event{
			{Type: session.TypeTurnStart, Turn: 1}, user("a"),
			{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Text: "x"}},
			{Type: "memo/x", Ignorable: true, Data: 1},
		}, []session.Message{{Role: "user", Content: "a"}}},
		{"replace splices a range", []session.Event{user("a"), user("b"), user("c"), user("d"), replace(1, 2, "bc", 1, 2)},
			[]session.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "bc"}, {Role: "user", Content: "d"}}},
		{"replace of a replace", []session.Event{user("a"), user("b"), user("c"), replace(0, 1, "ab", 0, 1), replace(3, 2, "abc", 3, 2, 0, 1)},
			[]session.Message{{Role: "user", Content: "abc"}}},
		{"replace of a single event that projects to nothing", []session.Event{user("a"), assistant(""), replace(1, 1, "x", 1)},
			[]session.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "x"}}},
		{"replace by an assistant message", []session.Event{user("a"), user("b"),
			{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Surface: &session.Surface{Op: session.OpReplace, Start: 0, End: 1}, Sources: []int64{0, 1}, Data: session.AssistantMessage{Content: "ab"}}},
			[]session.Message{{Role: "assistant", Content: "ab"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := session.DeriveMessages(records(t, tt.evs...))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDeriveMessagesRefusesInvalidReplaces(t *testing.T) {
	tests := []struct {
		name string
		evs  []session.Event
	}{
		{"start not on the surface", []session.Event{{Type: session.TypeTurnStart, Turn: 1}, user("a"), replace(0, 1, "x", 0, 1)}},
		{"endpoint already shadowed", []session.Event{user("a"), user("b"), replace(0, 1, "x", 0, 1), replace(0, 2, "y", 0, 2)}},
		{"endpoints out of surface order", []session.Event{user("a"), user("b"), replace(1, 0, "x", 0, 1)}},
		{"a shadowed event not cited", []session.Event{user("a"), user("b"), user("c"), replace(0, 2, "x", 0, 2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := session.DeriveMessages(records(t, tt.evs...))
			require.ErrorIs(t, err, session.ErrInvalidReplace)
		})
	}
}

func TestFoldMessagesStayValidAfterLaterAdds(t *testing.T) {
	recs := records(t, user("a"), user("b"), replace(0, 1, "ab", 0, 1), user("c"))
	f := session.NewFold()
	require.NoError(t, f.Add(recs[0]))
	require.NoError(t, f.Add(recs[1]))
	before := f.Messages()
	require.NoError(t, f.Add(recs[2]))
	require.NoError(t, f.Add(recs[3]))
	assert.Equal(t, []session.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, before)
	assert.Equal(t, []session.Message{{Role: "user", Content: "ab"}, {Role: "user", Content: "c"}}, f.Messages())
	assert.Equal(t, []int64{2, 3}, f.Surface())
	// A refused replace leaves the fold as it was.
	bad, err := session.NewRecord(4, epoch, replace(0, 0, "x", 0))
	require.NoError(t, err)
	require.ErrorIs(t, f.Add(bad), session.ErrInvalidReplace)
	assert.Equal(t, []int64{2, 3}, f.Surface())
}

func TestDeriveHeaderTakesLatestSnapshot(t *testing.T) {
	hdr := func(model string, h session.Header) session.Event {
		h.Model = model
		return session.Event{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderChange, Header: h}}
	}
	_, ok := session.DeriveHeader(records(t, user("a")))
	assert.False(t, ok)

	recs := records(t, hdr("a", session.Header{System: "s"}), user("x"), hdr("b", session.Header{Tools: []session.ToolSpec{}, Stop: []string{}}))
	h, ok := session.DeriveHeader(recs)
	require.True(t, ok)
	assert.Equal(t, session.Header{Model: "b"}, h, "empty tools and stop are absent; nothing is inherited from older snapshots")
	assert.True(t, session.HeaderEquals(h, session.Header{Model: "b"}))
}

// TestFoldIncrementalEqualsFresh: for random valid logs with replaces,
// the session's memoized fold equals a fresh fold of its records, and a
// simple model of the surface, after every append.
func TestFoldIncrementalEqualsFresh(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t)
		s := h.create()
		type entry struct {
			seq int64
			msg *session.Message
		}
		var model []entry
		n := rapid.IntRange(1, 60).Draw(rt, "events")
		for i := 0; i < n; i++ {
			seq := int64(s.Len())
			var ev session.Event
			var msg *session.Message
			text := rapid.StringMatching(`[a-c]{0,2}`).Draw(rt, "text")
			kind := rapid.IntRange(0, 5).Draw(rt, "kind")
			if kind == 5 && len(model) == 0 {
				kind = 0
			}
			switch kind {
			case 0:
				ev = user(text)
				msg = &session.Message{Role: "user", Content: text}
			case 1:
				var calls []session.ToolCall
				if rapid.Bool().Draw(rt, "calls") {
					calls = []session.ToolCall{{ID: fmt.Sprint("c", seq), Name: "f", Arguments: "{}"}}
				}
				ev = assistant(text, calls...)
				if text != "" || calls != nil {
					msg = &session.Message{Role: "assistant", Content: text, ToolCalls: calls}
				}
			case 2:
				ev = result(fmt.Sprint("c", seq), text)
				msg = &session.Message{Role: "tool", Content: text, ToolCallID: fmt.Sprint("c", seq), Name: "f"}
			case 3:
				ev = session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Text: text}}
			case 4:
				ev = session.Event{Type: session.TypeTurnStart, Turn: 1}
			case 5:
				lo := rapid.IntRange(0, len(model)-1).Draw(rt, "lo")
				hi := rapid.IntRange(lo, len(model)-1).Draw(rt, "hi")
				var sources []int64
				for _, e := range model[lo : hi+1] {
					sources = append(sources, e.seq)
				}
				ev = replace(model[lo].seq, model[hi].seq, "sum:"+text, sources...)
				msg = &session.Message{Role: "user", Content: "sum:" + text}
				model = append(model[:lo:lo], append([]entry{{seq, msg}}, model[hi+1:]...)...)
			}
			if kind <= 2 {
				model = append(model, entry{seq, msg})
			}
			_, err := s.Append(h.ctx, ev)
			require.NoError(rt, err)

			fresh, err := session.DeriveMessages(s.Records())
			require.NoError(rt, err)
			want := []session.Message{}
			for _, e := range model {
				if e.msg != nil {
					want = append(want, *e.msg)
				}
			}
			require.Equal(rt, want, fresh, "fresh fold vs model after seq %d", seq)
			require.Equal(rt, fresh, append([]session.Message{}, s.Messages()...), "memoized vs fresh after seq %d", seq)
		}
	})
}
