package otel_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/telemetry/otel"
	"github.com/vigil-run/vigil/session"
)

// TestSpansOfHandMadeLogs pins which spans the fold makes of logs no
// loop writes as well as of ones it does: records that end nothing open
// (a step, a call or a turn never started, a call of another turn) make
// no span, and a turn start drops what an unfinished turn left open.
func TestSpansOfHandMadeLogs(t *testing.T) {
	type ev struct {
		typ        string
		turn, step int
		data       any
	}
	call := func(id string) session.ToolCall { return session.ToolCall{ID: id, Name: "t", Arguments: "{}"} }
	result := func(id string) session.ToolResult { return session.ToolResult{ID: id, Content: "ok"} }
	done := session.TurnEnd{Reason: session.ReasonCompleted}
	for _, tc := range []struct {
		name string
		evs  []ev
		want []string
	}{
		{name: "a whole turn", evs: []ev{
			{session.TypeTurnStart, 1, 0, session.TurnStart{}}, {session.TypeStepStart, 1, 1, session.StepStart{}},
			{session.TypeAssistantMessage, 1, 1, session.AssistantMessage{ToolCalls: []session.ToolCall{call("a")}}},
			{session.TypeStepEnd, 1, 1, session.StepEnd{Finish: "tool_calls"}},
			{session.TypeToolCall, 1, 1, call("a")}, {session.TypeToolResult, 1, 1, result("a")},
			{session.TypeTurnEnd, 1, 0, done},
		}, want: []string{"chat 1-2", "execute_tool t 4-5", "invoke_agent 0-6"}},
		{name: "ends of nothing open", evs: []ev{
			{session.TypeStepStart, 1, 1, session.StepStart{}}, {session.TypeToolCall, 1, 1, call("a")},
			{session.TypeToolResult, 1, 1, result("a")}, {session.TypeStepEnd, 1, 1, session.StepEnd{}},
			{session.TypeTurnEnd, 1, 0, done},
		}},
		{name: "a result of an unknown call", evs: []ev{
			{session.TypeTurnStart, 1, 0, session.TurnStart{}}, {session.TypeToolResult, 1, 1, result("x")},
			{session.TypeTurnEnd, 1, 0, done},
		}, want: []string{"invoke_agent 0-2"}},
		{name: "a new turn drops the open step and calls", evs: []ev{
			{session.TypeTurnStart, 1, 0, session.TurnStart{}}, {session.TypeStepStart, 1, 1, session.StepStart{}},
			{session.TypeToolCall, 1, 1, call("a")},
			{session.TypeTurnStart, 2, 0, session.TurnStart{}}, {session.TypeToolResult, 2, 1, result("a")},
			{session.TypeStepEnd, 2, 1, session.StepEnd{}}, {session.TypeTurnEnd, 2, 0, done},
		}, want: []string{"invoke_agent 3-6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var recs []session.Record
			for i, e := range tc.evs {
				r, err := session.NewRecord(int64(i), time.UnixMilli(int64(i)), session.Event{Type: e.typ, Turn: e.turn, Step: e.step, Data: e.data})
				require.NoError(t, err)
				recs = append(recs, r)
			}
			var got []string
			for _, s := range otel.Spans("s1", recs, otel.Options{}) {
				got = append(got, fmt.Sprintf("%s %d-%d", s.Name, s.First, s.Last))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
