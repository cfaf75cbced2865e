package session_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-run/vigil/session"
)

func TestClosersRule(t *testing.T) {
	call := func(id string) session.ToolCall { return session.ToolCall{ID: id, Name: "f", Arguments: "{}"} }
	base := []session.Event{
		{Type: session.TypeTurnStart, Turn: 1},
		user("q"),
		{Type: session.TypeStepStart, Turn: 1, Step: 1},
		assistant("", call("a"), call("b"), call("c"), call("d")),                         // seq 3
		{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: call("a")},                   // 4: answered
		{Type: session.TypeToolStart, Turn: 1, Step: 1, Data: session.ToolStart{ID: "a"}}, // 5
		{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{4}, Data: session.ToolResult{ID: "a"}},
		{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: call("b")},                   // 7: started
		{Type: session.TypeToolStart, Turn: 1, Step: 1, Data: session.ToolStart{ID: "b"}}, // 8
		{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: call("c")},                   // 9: logged only
		// d: asked for by the model, never logged as a call.
	}
	got := session.Closers(records(t, base...))
	want := []session.Event{
		{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{7}, Data: session.ToolResult{ID: "b", Name: "f", Error: &session.ToolResultError{Code: session.CodeToolOutcomeUnknown, Message: "the session was interrupted while the tool ran; its outcome is unknown"}}},
		{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{9}, Data: session.ToolResult{ID: "c", Name: "f", Error: &session.ToolResultError{Code: session.CodeToolNotStarted, Message: "the session was interrupted before the tool call started"}}},
		{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{3}, Data: session.ToolResult{ID: "d", Name: "f", Error: &session.ToolResultError{Code: session.CodeToolNotStarted, Message: "the session was interrupted before the tool call started"}}},
		{Type: session.TypeStepEnd, Turn: 1, Step: 1, Data: session.StepEnd{Finish: session.FinishError}},
		{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonInterrupted}},
	}
	assert.Equal(t, want, got)

	// Between steps only the turn is closed; a closed log needs nothing.
	between := append(base[:2:2], session.Event{Type: session.TypeStepStart, Turn: 1, Step: 1}, session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 1})
	assert.Equal(t, []session.Event{{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonInterrupted}}}, session.Closers(records(t, between...)))
	closed := append(between, session.Event{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonCompleted}})
	assert.Nil(t, session.Closers(records(t, closed...)))
	assert.Nil(t, session.Closers(nil))
}

// TestClosersNeverAnswerACallTwice: in logs written before call ids were
// unique per session (a provider repeating call_0), a call of the open
// step may have an id that already has a result; repair writes no second
// one, which would break the log for good.
func TestClosersNeverAnswerACallTwice(t *testing.T) {
	call := func(id string) session.ToolCall { return session.ToolCall{ID: id, Name: "f", Arguments: "{}"} }
	step := func(turn int, evs ...session.Event) []session.Event {
		for i := range evs {
			evs[i].Turn, evs[i].Step = turn, 1
		}
		return evs
	}
	turn1 := append([]session.Event{{Type: session.TypeTurnStart, Turn: 1}, user("q"), {Type: session.TypeStepStart, Turn: 1, Step: 1}},
		step(1, assistant("", call("call_0")), session.Event{Type: session.TypeToolCall, Data: call("call_0")}, result("call_0", "2"))...)
	turn1 = append(turn1, session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 1, Data: session.StepEnd{Finish: session.FinishToolCalls}},
		session.Event{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonCompleted}})
	open2 := []session.Event{{Type: session.TypeTurnStart, Turn: 2}, user("again"), {Type: session.TypeStepStart, Turn: 2, Step: 1}}
	tail := func(turn int) []session.Event {
		return []session.Event{
			{Type: session.TypeStepEnd, Turn: turn, Step: 1, Data: session.StepEnd{Finish: session.FinishError}},
			{Type: session.TypeTurnEnd, Turn: turn, Data: session.TurnEnd{Reason: session.ReasonInterrupted}},
		}
	}
	for _, tc := range []struct {
		name string
		log  []session.Event
		want []session.Event
	}{{
		name: "asked for again in a later turn, the call refused",
		log:  append(append(slices.Clone(turn1), open2...), step(2, assistant("", call("call_0"), call("call_1")))...),
		want: append([]session.Event{{Type: session.TypeToolResult, Turn: 2, Step: 1, Sources: []int64{11}, Data: session.ToolResult{ID: "call_1", Name: "f",
			Error: &session.ToolResultError{Code: session.CodeToolNotStarted, Message: "the session was interrupted before the tool call started"}}}}, tail(2)...),
	}, {
		name: "asked for again in a later turn, the call logged",
		log:  append(append(slices.Clone(turn1), open2...), step(2, assistant("", call("call_0")), session.Event{Type: session.TypeToolCall, Data: call("call_0")})...),
		want: tail(2),
	}, {
		name: "logged twice in one step",
		log: append([]session.Event{{Type: session.TypeTurnStart, Turn: 1}, user("q"), {Type: session.TypeStepStart, Turn: 1, Step: 1}},
			step(1, assistant("", call("x"), call("x")), session.Event{Type: session.TypeToolCall, Data: call("x")}, result("x", "1"), session.Event{Type: session.TypeToolCall, Data: call("x")})...),
		want: tail(1),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, session.Closers(records(t, tc.log...)))
		})
	}
}
