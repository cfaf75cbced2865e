package agentloop_test

import (
	"context"
	"fmt"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// A turn with a scripted model that calls a tool, then answers. Every
// step of it is in the session log.
func ExampleAgent_Run() {
	root := bus.New()
	defer root.Dispose()
	c := root.Context()

	// A provider and a tool, here provided directly rather than by plugins.
	model, _ := scripted.New(scripted.Config{Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "6*7"}}}},
		{Text: "It is 42."},
	}})
	_, _ = agentloop.ProviderService.Provide(c, model)
	_, _ = agentloop.ProvideTool(c, calc.Tool{})

	sessions := live.NewManager(c, memory.New())
	sess, _ := sessions.Create(context.Background())
	agent := agentloop.New(c, agentloop.Config{System: "Use the calculator."})

	res, err := agent.Run(context.Background(), sess, "What is six times seven?",
		agentloop.OnChunk(func(ch agentloop.Chunk) { fmt.Print(ch.Text) }))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println()
	fmt.Println(res.Reason, "in", res.Steps, "steps")
	for _, m := range sess.Messages() {
		fmt.Printf("%-9s %s%s\n", m.Role, m.Content, toolCalls(m))
	}
	// Output:
	// It is 42.
	// completed in 2 steps
	// user      What is six times seven?
	// assistant calc {"expression":"6*7"}
	// tool      42
	// assistant It is 42.
}

func toolCalls(m session.Message) string {
	s := ""
	for _, c := range m.ToolCalls {
		s += c.Name + " " + c.Arguments
	}
	return s
}

// A one-shot request (a title, a summary) is declared: it names its
// purpose, the records it shows the model and the instruction that
// follows them, and is logged in the session as request/oneshot before
// the provider receives it, its usage as request/usage after the reply.
func ExampleComplete() {
	root := bus.New()
	defer root.Dispose()
	c := root.Context()
	sess, _ := live.NewManager(c, memory.New()).Seed(context.Background(),
		session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "What is six times seven?"}})
	model, _ := scripted.New(scripted.Config{Script: []scripted.Reply{{Text: "Six times seven"}}})
	reply, err := agentloop.Complete(context.Background(), c, model, sess, agentloop.OneShot{
		Purpose:     "title",
		Sources:     []int64{0},
		Instruction: "A title for the conversation above, in three words.",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reply.Content)
	for _, r := range sess.Records()[1:] {
		fmt.Println(r.Type(), r.Sources())
	}
	// Output:
	// Six times seven
	// session/end-seed []
	// request/oneshot [0]
	// request/usage [2]
}
