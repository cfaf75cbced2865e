package session

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScanTurns pins the turn state folded from a log's tail: the open
// turn and step, the calls still waiting in the open step with how far
// each got, and the step's usage; records outside the open step change
// nothing.
func TestScanTurns(t *testing.T) {
	type ev struct {
		typ        string
		turn, step int
		data       any
	}
	call := func(id string) ToolCall { return ToolCall{ID: id, Name: "t" + id, Arguments: "{}"} }
	open := []ev{{TypeTurnStart, 1, 0, TurnStart{}}, {TypeStepStart, 1, 1, StepStart{}}}
	for _, tc := range []struct {
		name       string
		evs        []ev
		turn, step int
		pending    string
		usage      *Usage
	}{
		{name: "empty"},
		{name: "open step", evs: open, turn: 1, step: 1},
		{name: "calls named, logged, started, answered", evs: append(open[:2:2],
			ev{TypeAssistantMessage, 1, 1, AssistantMessage{ToolCalls: []ToolCall{call("a"), call("b"), call("c")}}},
			ev{TypeToolCall, 1, 1, call("b")}, ev{TypeToolCall, 1, 1, call("d")},
			ev{TypeToolStart, 1, 1, ToolStart{ID: "b"}}, ev{TypeToolStart, 1, 1, ToolStart{ID: "x"}},
			ev{TypeToolResult, 1, 1, ToolResult{ID: "a"}}, ev{TypeToolResult, 1, 1, ToolResult{ID: "x"}},
			ev{TypeStepUsage, 1, 1, Usage{Input: 3, Output: 4}}),
			turn: 1, step: 1, pending: "b:tb@3 logged started|c:tc@2|d:td@4 logged", usage: &Usage{Input: 3, Output: 4}},
		{name: "records of another step change nothing", evs: append(open[:2:2],
			ev{TypeAssistantMessage, 1, 2, AssistantMessage{ToolCalls: []ToolCall{call("a")}}},
			ev{TypeToolCall, 1, 2, call("b")}, ev{TypeStepUsage, 1, 2, Usage{Input: 1}}, ev{TypeStepEnd, 1, 2, StepEnd{}}),
			turn: 1, step: 1},
		{name: "records outside a step change nothing", evs: []ev{{TypeTurnStart, 1, 0, TurnStart{}},
			{TypeAssistantMessage, 1, 1, AssistantMessage{ToolCalls: []ToolCall{call("a")}}}, {TypeToolCall, 1, 1, call("b")}},
			turn: 1},
		{name: "step end closes it", evs: append(open[:2:2], ev{TypeToolCall, 1, 1, call("b")}, ev{TypeStepEnd, 1, 1, StepEnd{}}), turn: 1},
		{name: "a step start outside a turn opens nothing", evs: []ev{{TypeStepStart, 1, 1, StepStart{}}}},
		{name: "another turn's end closes nothing", evs: append(open[:2:2], ev{TypeTurnEnd, 2, 0, TurnEnd{Reason: ReasonCompleted}}), turn: 1, step: 1},
		{name: "turn end closes all", evs: append(open[:2:2], ev{TypeToolCall, 1, 1, call("b")}, ev{TypeTurnEnd, 1, 0, TurnEnd{Reason: ReasonCompleted}})},
		{name: "a later turn start resets", evs: append(open[:2:2], ev{TypeToolCall, 1, 1, call("b")}, ev{TypeTurnStart, 2, 0, TurnStart{}}), turn: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var recs []Record
			for i, e := range tc.evs {
				r, err := NewRecord(int64(i), time.UnixMilli(0), Event{Type: e.typ, Turn: e.turn, Step: e.step, Data: e.data})
				require.NoError(t, err)
				recs = append(recs, r)
			}
			st := scanTurns(recs)
			assert.Equal(t, tc.turn, st.turn)
			assert.Equal(t, tc.step, st.step)
			var pending string
			for i, p := range st.pending {
				if i > 0 {
					pending += "|"
				}
				pending += fmt.Sprintf("%s:%s@%d", p.id, p.name, p.source)
				if p.logged {
					pending += " logged"
				}
				if p.started {
					pending += " started"
				}
			}
			assert.Equal(t, tc.pending, pending)
			assert.Equal(t, tc.usage, st.usage)
		})
	}
}
