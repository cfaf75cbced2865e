package invariants_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// TestToolPairingRefusesAReusedCallID: the loop now logs unique ids for a
// provider that repeats them, and the rule still refuses a real
// duplicate: a tool/call reusing an earlier turn's id, consistent with its
// chunk and message, and a second result for an answered id.
func TestToolPairingRefusesAReusedCallID(t *testing.T) {
	call := session.ToolCall{ID: "call_0", Name: "calc", Arguments: `{}`}
	// step appends one step asking for call and returns the seq of its
	// assistant message.
	step := func(t *testing.T, s *live.Session, turn int) int64 {
		t.Helper()
		appendAll(t, s, turnStart(turn), user(turn, "compute"), stepStart(turn, 1),
			session.Event{Type: session.TypeAssistantChunk, Turn: turn, Step: 1, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: call.ID, Name: call.Name, Arguments: call.Arguments}}})
		msg, err := s.Append(context.Background(), session.Event{Type: session.TypeAssistantMessage, Turn: turn, Step: 1, Sources: []int64{int64(s.Len() - 1)}, Data: session.AssistantMessage{ToolCalls: []session.ToolCall{call}}})
		require.NoError(t, err)
		return msg.Seq()
	}
	for _, tc := range []struct {
		name string
		ev   func(msg int64) session.Event
		want string
	}{
		{"tool/call", func(int64) session.Event {
			return session.Event{Type: session.TypeToolCall, Turn: 2, Step: 1, Data: call}
		}, `tool call id "call_0" already used (turn 1 step 1)`},
		{"synthetic result", func(msg int64) session.Event {
			return session.Event{Type: session.TypeToolResult, Turn: 2, Step: 1, Sources: []int64{msg},
				Data: session.ToolResult{ID: call.ID, Name: call.Name, Error: &session.ToolResultError{Code: session.CodeToolNotStarted, Message: "not started"}}}
		}, `second tool/result for call "call_0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.mount(t, invariants.ModeStrict)
			s, err := w.mgr.Create(context.Background())
			require.NoError(t, err)
			step(t, s, 1)
			c, err := s.Append(context.Background(), session.Event{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: call})
			require.NoError(t, err)
			appendAll(t, s,
				session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{c.Seq()}, Data: session.ToolResult{ID: call.ID, Name: call.Name, Content: "2"}},
				stepEnd(1, 1), turnEnd(1))
			msg := step(t, s, 2)

			n := s.Len()
			_, err = s.Append(context.Background(), tc.ev(msg))
			ie := requireViolation(t, err, invariants.RuleToolPairing)
			assert.Equal(t, tc.want, ie.Message)
			assert.ErrorIs(t, err, agentloop.ErrInvariant, "a refusal is not a policy's block")
			assert.Equal(t, n, s.Len())
		})
	}
}
