package live_test

import (
	"context"
	"fmt"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// A live session memoizes the same fold as it is appended to; a fork
// inherits a prefix of the log.
func ExampleSession_Messages() {
	ctx := context.Background()
	root := bus.New()
	defer root.Dispose()
	m := live.NewManager(root.Context(), memory.New())
	s, _ := m.Create(ctx)

	s.Append(ctx, session.Event{Type: session.TypeTurnStart, Turn: 1})
	s.Append(ctx, session.Event{Type: session.TypeUserMessage, Turn: 1, Data: session.UserMessage{Content: "hello"}})
	s.Append(ctx, session.Event{Type: session.TypeStepStart, Turn: 1, Step: 1})
	s.Append(ctx, session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Text: "hi!"}})
	s.Append(ctx, session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Sources: []int64{3}, Data: session.AssistantMessage{Content: "hi!"}})
	s.Append(ctx, session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 1, Data: session.StepEnd{Finish: session.FinishStop}})
	s.Append(ctx, session.Event{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonCompleted}})

	for _, msg := range s.Messages() {
		fmt.Printf("%s: %s\n", msg.Role, msg.Content)
	}
	fork, _ := m.Fork(ctx, s.ID(), 6)
	fmt.Println("fork:", fork.Len(), "records, last", fork.Records()[fork.Len()-1].Type())
	// Output:
	// user: hello
	// assistant: hi!
	// fork: 8 records, last session/end-seed
}
