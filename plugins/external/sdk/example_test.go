package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vigil-run/vigil/plugins/external/sdk"
	"github.com/vigil-run/vigil/session"
)

// A tool plugin is a Plugin value, and its binary's main is one call:
// sdk.Serve(p). Here the host's side is played by hand: Configure with
// the entry's config, then a call of the tool with the model's arguments.
func ExampleServe() {
	type Config struct {
		Greeting string `json:"greeting"`
	}
	type args struct {
		Name string `json:"name"`
	}
	greeting := "hello"
	p := &sdk.Plugin[Config]{
		Name: "greeter",
		Configure: func(_ context.Context, _ *sdk.Host, c Config) error {
			if c.Greeting != "" {
				greeting = c.Greeting
			}
			return nil
		},
		Tools: []sdk.Tool{sdk.NewTool("greet", "greets someone",
			json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
			func(_ context.Context, a args) (string, error) {
				return greeting + ", " + a.Name, nil
			})},
	}
	// func main() { sdk.Serve(p) }

	ctx := context.Background()
	_ = p.Configure(ctx, nil, Config{Greeting: "bonjour"})
	for _, call := range []string{`{"name":"Ada"}`, `{"nom":"Ada"}`} {
		out, err := p.Tools[0].Run(ctx, json.RawMessage(call))
		fmt.Printf("%s: %q, %v\n", call, out, err)
	}
	// Output:
	// {"name":"Ada"}: "bonjour, Ada", <nil>
	// {"nom":"Ada"}: "", INVALID_ARGUMENTS: json: unknown field "nom"
}

// A policy plugin: Validate sees each tool/call before it is committed
// and refuses the ones it does not like.
func ExampleVeto() {
	validate := func(_ context.Context, ev *sdk.Event) error {
		call, err := sdk.Data[session.ToolCall](ev)
		if err != nil {
			return err
		}
		if strings.Contains(call.Arguments, "rm -rf") {
			return sdk.Veto("POLICY", "no recursive deletes")
		}
		return nil
	}
	p := &sdk.Plugin[struct{}]{Name: "policy", Types: []string{session.TypeToolCall}, Validate: validate}

	line := []byte(`{"seq":9,"type":"tool/call","time":"2026-11-29T20:21:25.120Z","turn":1,"step":1,"data":{"id":"c1","name":"shell","arguments":"{\"cmd\":\"rm -rf /\"}"}}`)
	err := p.Validate(context.Background(), &sdk.Event{Session: "s", Seq: 9, Type: session.TypeToolCall, Line: line})
	fmt.Println(err)
	// Output: veto POLICY: no recursive deletes
}
