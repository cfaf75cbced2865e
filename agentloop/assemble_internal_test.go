package agentloop

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// TestCallIDsAssign: a new provider id is kept; a repeated or missing one
// gets the turn, step and index, and a suffix should that be taken too.
func TestCallIDsAssign(t *testing.T) {
	c := &callIDs{}
	for _, tc := range []struct {
		id              string
		turn, step, idx int
		want            string
	}{
		{"call_0", 1, 1, 0, "call_0"},
		{"call_0", 1, 1, 1, "call_0_1_1_1"},
		{"call_0_2_1_0", 1, 2, 0, "call_0_2_1_0"}, // a provider id that looks derived
		{"call_0", 2, 1, 0, "call_0_2_1_0_2"},
		{"call_0", 2, 1, 0, "call_0_2_1_0_3"},
		{"", 3, 1, 0, "call_3_1_0"},
		{"", 3, 1, 0, "call_3_1_0_2"},
		{"toolu_01", 3, 1, 1, "toolu_01"},
	} {
		assert.Equal(t, tc.want, c.assign(tc.id, tc.turn, tc.step, tc.idx), "%+v", tc)
	}
}

// TestCallIDsSync: the ids are read from chunks, messages, calls and
// results, incrementally, and read afresh for another log.
func TestCallIDsSync(t *testing.T) {
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	mgr := live.NewManager(root.Context(), memory.New())
	ctx := context.Background()
	newSession := func(evs ...session.Event) *live.Session {
		s, err := mgr.Create(ctx)
		require.NoError(t, err)
		for _, ev := range evs {
			_, err := s.Append(ctx, ev)
			require.NoError(t, err)
		}
		return s
	}
	ev := func(typ string, data any) session.Event {
		return session.Event{Type: typ, Turn: 1, Step: 1, Data: data}
	}
	head := []session.Event{{Type: session.TypeTurnStart, Turn: 1}, {Type: session.TypeStepStart, Turn: 1, Step: 1}}
	a := newSession(append(head,
		ev(session.TypeAssistantChunk, session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: "chunk"}}),
		ev(session.TypeAssistantMessage, session.AssistantMessage{ToolCalls: []session.ToolCall{{ID: "msg", Name: "f"}}}),
		ev(session.TypeToolCall, session.ToolCall{ID: "call", Name: "f"}),
	)...)
	var c callIDs
	c.sync(a)
	_, err := a.Append(ctx, session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{4}, Data: session.ToolResult{ID: "result", Name: "f"}})
	require.NoError(t, err)
	c.sync(a)
	for _, id := range []string{"chunk", "msg", "call", "result"} {
		assert.Contains(t, c.ids, id)
	}
	assert.Equal(t, a.Len(), c.n)

	// A longer log: not a continuation of a, so read from its start.
	b := newSession(append(head, ev(session.TypeToolCall, session.ToolCall{ID: "x", Name: "f"}), ev(session.TypeToolCall, session.ToolCall{ID: "y", Name: "f"}),
		ev(session.TypeToolCall, session.ToolCall{ID: "z", Name: "f"}), ev(session.TypeToolCall, session.ToolCall{ID: "w", Name: "f"}),
		ev(session.TypeToolCall, session.ToolCall{ID: "v", Name: "f"}))...)
	require.Greater(t, b.Len(), a.Len())
	c.sync(b)
	assert.Equal(t, map[string]struct{}{"x": {}, "y": {}, "z": {}, "w": {}, "v": {}}, c.ids)
}
