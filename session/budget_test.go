package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-run/vigil/session"
)

func TestBudgetStops(t *testing.T) {
	step := func(turn, n int) []session.Event {
		return []session.Event{
			{Type: session.TypeStepStart, Turn: turn, Step: n, Data: session.StepStart{}},
			{Type: session.TypeStepEnd, Turn: turn, Step: n, Data: session.StepEnd{Finish: session.FinishToolCalls}},
		}
	}
	turn := func(n, steps int, end session.TurnEnd) []session.Event {
		evs := []session.Event{{Type: session.TypeTurnStart, Turn: n, Data: session.TurnStart{}}}
		for s := 1; s <= steps; s++ {
			evs = append(evs, step(n, s)...)
		}
		return append(evs, session.Event{Type: session.TypeTurnEnd, Turn: n, Data: end})
	}
	budget := func(msg string) session.TurnEnd { return session.TurnEnd{Reason: session.ReasonBudget, Error: msg} }
	tests := []struct {
		name  string
		turns [][]session.Event
		want  []session.BudgetStop
	}{
		{"none", [][]session.Event{turn(1, 2, session.TurnEnd{Reason: session.ReasonCompleted}), turn(2, 1, session.TurnEnd{Reason: session.ReasonMaxSteps})}, nil},
		{"after two steps", [][]session.Event{turn(1, 2, budget("spent"))}, []session.BudgetStop{{Turn: 1, Step: 3, Error: "spent"}}},
		{"before any step", [][]session.Event{turn(1, 1, session.TurnEnd{Reason: session.ReasonCompleted}), turn(2, 0, budget("session spent"))},
			[]session.BudgetStop{{Turn: 2, Step: 1, Error: "session spent"}}},
		{"each turn", [][]session.Event{turn(1, 1, budget("a")), turn(2, 3, budget("b"))},
			[]session.BudgetStop{{Turn: 1, Step: 2, Error: "a"}, {Turn: 2, Step: 4, Error: "b"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var evs []session.Event
			for _, tr := range tc.turns {
				evs = append(evs, tr...)
			}
			assert.Equal(t, tc.want, session.BudgetStops(records(t, evs...)))
		})
	}
}
