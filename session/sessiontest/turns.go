package sessiontest

import (
	"fmt"

	"github.com/vigil-run/vigil/session"
)

// TextTurns returns the events of turns of one step each, a question and
// its answer, from turn 1 on, until they hold at least n events and
// messages of them, for seeding long sessions ([live.Manager.Seed]).
func TextTurns(n int) []session.Event {
	evs := make([]session.Event, 0, n+7)
	for turn := 1; len(evs) < n; turn++ {
		answer := fmt.Sprintf("It is %d.", 2*turn)
		base := int64(len(evs))
		evs = append(evs,
			session.Event{Type: session.TypeTurnStart, Turn: turn},
			session.Event{Type: session.TypeUserMessage, Turn: turn, Data: session.UserMessage{Content: fmt.Sprintf("Question %d: what is %d times two?", turn, turn)}},
			session.Event{Type: session.TypeStepStart, Turn: turn, Step: 1},
			session.Event{Type: session.TypeAssistantChunk, Turn: turn, Step: 1, Data: session.AssistantChunk{Text: answer}},
			session.Event{Type: session.TypeAssistantMessage, Turn: turn, Step: 1, Sources: []int64{base + 3}, Data: session.AssistantMessage{Content: answer}},
			session.Event{Type: session.TypeStepEnd, Turn: turn, Step: 1, Data: session.StepEnd{Finish: session.FinishStop}},
			session.Event{Type: session.TypeTurnEnd, Turn: turn, Data: session.TurnEnd{Reason: session.ReasonCompleted}},
		)
	}
	return evs
}
