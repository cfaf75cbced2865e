package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/agentloop/ledger"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// refund is a tool with an effect: each refund it makes is counted.
type refund struct{ made *int }

func (refund) Spec() session.ToolSpec {
	return session.ToolSpec{Name: "refund", Description: "Refund an order.", Parameters: json.RawMessage(`{"type":"object"}`), Idempotent: true}
}

// Execute refunds once per call: a run of a call already done, after a
// crash or in a continuation, returns the recorded result.
func (r refund) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	return ledger.Do(ctx, func(ctx context.Context) (string, error) {
		*r.made++
		return fmt.Sprintf("refund #%d made", *r.made), nil
	})
}

// A tool's work runs once per idempotency key: the loop gives the tool
// its call's key and its session's ledger, and a second run of the call
// (here run by hand, as a continuation after a crash would) returns what
// the first recorded.
func ExampleDo() {
	root := bus.New()
	defer root.Dispose()
	c := root.Context()
	model, _ := scripted.New(scripted.Config{Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "refund", Arguments: map[string]any{"order": 7}}}},
		{Text: "Refunded."},
	}})
	_, _ = agentloop.ProviderService.Provide(c, model)
	var made int
	tool := refund{made: &made}
	_, _ = agentloop.ProvideTool(c, tool)
	sess, _ := live.NewManager(c, memory.New()).Create(context.Background())
	agent := agentloop.New(c, agentloop.Config{})
	if _, err := agent.Run(context.Background(), sess, "Refund order 7."); err != nil {
		fmt.Println(err)
		return
	}

	var call string
	for _, r := range sess.Records() {
		if r.Type() == session.TypeToolResult {
			var res session.ToolResult
			_ = json.Unmarshal(r.Data(), &res)
			call = res.ID
			fmt.Println("the model saw:", res.Content)
		}
	}
	key := session.IdempotencyKey(sess.ID(), call)
	again, err := tool.Execute(agentloop.ToolContext(context.Background(), key, sess.Ledger()), nil)
	fmt.Println("the call run again:", again, err)
	fmt.Println("refunds made:", made)
	// Output:
	// the model saw: refund #1 made
	// the call run again: refund #1 made <nil>
	// refunds made: 1
}
