package agentloop_test

import (
	"context"
	"fmt"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/calc"
	"github.com/vigil-run/vigil/plugins/scripted"
	"github.com/vigil-run/vigil/session"
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

	sessions := session.NewManager(c, memory.New())
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

// A one-shot request (a title, a summary) goes through llm/stream but is
// not loop-built: it is not logged and not checked against a log.
func ExampleComplete() {
	root := bus.New()
	defer root.Dispose()
	model, _ := scripted.New(scripted.Config{Script: []scripted.Reply{{Text: "Six times seven"}}})
	reply, _ := agentloop.Complete(context.Background(), root.Context(), model, &agentloop.Request{
		Messages: []session.Message{{Role: session.RoleUser, Content: "Title for: what is six times seven?"}},
	})
	fmt.Println(reply.Content)
	// Output:
	// Six times seven
}
