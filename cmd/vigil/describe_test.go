package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// TestDescribeRecord pins the one line `vigil sessions show` prints for
// each type of record, every branch of it.
func TestDescribeRecord(t *testing.T) {
	errOf := func(code, msg string) *session.ToolResultError {
		return &session.ToolResultError{Code: code, Message: msg}
	}
	tests := []struct {
		name string
		ev   session.Event
		want string
	}{
		{"turn", session.Event{Type: session.TypeTurnStart, Turn: 2, Data: session.TurnStart{}}, "turn 2"},
		{"turn continuing, posted", session.Event{Type: session.TypeTurnStart, Turn: 3, Data: session.TurnStart{Continues: 2, By: "ann"}}, "turn 3, continuing turn 2, posted by ann"},
		{"turn end", session.Event{Type: session.TypeTurnEnd, Turn: 2, Data: session.TurnEnd{Reason: session.ReasonCompleted}}, "end of turn 2: completed"},
		{"turn end with error", session.Event{Type: session.TypeTurnEnd, Turn: 2, Data: session.TurnEnd{Reason: session.ReasonError, Error: "it\nbroke"}}, "end of turn 2: error (it broke)"},
		{"step", session.Event{Type: session.TypeStepStart, Turn: 1, Step: 4, Data: session.StepStart{}}, "step 4"},
		{"step end", session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 1, Data: session.StepEnd{Finish: session.FinishStop}}, "end of step: stop"},
		{"step end with usage", session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 1, Data: session.StepEnd{Finish: session.FinishToolCalls, Usage: &session.Usage{Input: 3, Output: 4}}}, "end of step: tool_calls (tokens in 3, out 4)"},
		{"user", session.Event{Type: session.TypeUserMessage, Turn: 1, Data: session.UserMessage{Content: "hello  there"}}, "user: hello there"},
		{"summary", session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: 1, End: 5}, Data: session.UserMessage{Content: "so far"}}, "summary (replaces 1..5): so far"},
		{"header", session.Event{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: session.Header{Provider: "p", Model: "m", Tools: []session.ToolSpec{{Name: "t"}}}}}, "request header (initial): p/m, 1 tools"},
		{"digest", session.Event{Type: session.TypeRequestDigest, Turn: 1, Step: 1, Data: session.Digest{SHA256: "0123456789abcdef", Messages: 2}}, "request sent: 2 messages, sha256 0123456789ab"},
		{"one-shot", session.Event{Type: session.TypeRequestOneshot, Turn: 1, Data: session.Oneshot{Purpose: "compaction", SHA256: "0123456789abcdef", Messages: 3}}, "one-shot compaction sent: 3 messages, sha256 0123456789ab"},
		{"one-shot with header", session.Event{Type: session.TypeRequestOneshot, Turn: 1, Data: session.Oneshot{Purpose: "compaction", SHA256: "abc", Messages: 3, Header: &session.Header{Provider: "p", Model: "m"}}}, "one-shot compaction sent: 3 messages, sha256 abc, p/m"},
		{"usage", session.Event{Type: session.TypeRequestUsage, Turn: 1, Data: session.Usage{Input: 1, Output: 2}}, "usage: tokens in 1, out 2"},
		{"step usage", session.Event{Type: session.TypeStepUsage, Turn: 1, Step: 1, Data: session.Usage{Input: 5, Output: 6}}, "usage, for the step's end: tokens in 5, out 6"},
		{"chunk", session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Text: "h"}}, ""},
		{"assistant", session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Data: session.AssistantMessage{Content: "hi"}}, "assistant: hi"},
		{"assistant calls", session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Data: session.AssistantMessage{Content: "hi", ToolCalls: []session.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"a":1}`}}}}, `assistant: hi; assistant calls echo {"a":1}`},
		{"assistant empty", session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Data: session.AssistantMessage{}}, "assistant: (empty)"},
		{"tool call", session.Event{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: session.ToolCall{ID: "c1", Name: "echo", Arguments: `{"a":1}`}}, `tool call c1 echo({"a":1})`},
		{"tool result", session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Data: session.ToolResult{ID: "c1", Name: "echo", Content: "ok"}}, "tool result c1: ok"},
		{"tool result error", session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Data: session.ToolResult{ID: "c1", Name: "echo", Error: errOf(session.CodeToolNotStarted, "no")}}, "tool result c1: error TOOL_NOT_STARTED no"},
		{"retry", session.Event{Type: session.TypeToolRetry, Turn: 2, Data: session.ToolRetry{ID: "c1"}}, "retry of c1, whose outcome was unknown, with its idempotency key"},
		{"reconcile by retry", session.Event{Type: session.TypeToolReconcile, Turn: 2, Data: session.ToolReconcile{ID: "c1", Content: "done"}}, "reconciled c1 by its retry: done"},
		{"reconcile by a person, error", session.Event{Type: session.TypeToolReconcile, Turn: 2, Data: session.ToolReconcile{ID: "c1", By: "ann", Error: errOf(session.CodeToolError, "failed")}}, "reconciled c1 by ann: error TOOL_ERROR failed"},
		{"end seed", session.Event{Type: session.TypeEndSeed, Data: session.EndSeed{}}, "(end of inherited events)"},
		{"approval asked", session.Event{Type: session.TypeApprovalRequest, Turn: 1, Step: 1, Data: session.ApprovalRequest{ID: "c1", By: "policy"}}, "approval asked for c1 by policy"},
		{"approval asked, reason", session.Event{Type: session.TypeApprovalRequest, Turn: 1, Step: 1, Data: session.ApprovalRequest{ID: "c1", By: "policy", Reason: "risky"}}, "approval asked for c1 by policy: risky"},
		{"denied", session.Event{Type: session.TypeApprovalDecision, Turn: 1, Step: 1, Data: session.ApprovalDecision{ID: "c1", By: "ann"}}, "denied c1 by ann"},
		{"allowed for the session, cited, reason", session.Event{Type: session.TypeApprovalDecision, Turn: 1, Step: 1, Data: session.ApprovalDecision{ID: "c1", Allow: true, By: "ann", Scope: session.ScopeSession, Cites: 7, Reason: "fine"}}, "allowed c1 by ann (for this session) (per seq 7): fine"},
		{"policy", session.Event{Type: session.TypeApprovalPolicy, Data: session.ApprovalPolicy{By: "ops", Default: "ask", Rules: []session.ApprovalRule{{Tool: "x", Action: session.ActionDeny}}}}, "approval policy of ops: 1 rule(s), default ask"},
		{"a plugin's type", session.Event{Type: "acme/note", Ignorable: true, Data: json.RawMessage(`{}`)}, "acme/note"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := session.NewRecord(20, time.Unix(0, 0), tt.ev)
			require.NoError(t, err)
			assert.Equal(t, tt.want, describeRecord(r))
		})
	}
}
