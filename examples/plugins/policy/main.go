// Command policy is an example out-of-process Vigil plugin that vetoes
// tool calls. Before each tool/call event is committed it matches the
// call's tool name and arguments against the configured rules; a match
// refuses the event, so the call is never logged nor run, and the turn
// ends blocked, naming the plugin and the rule's reason.
//
//	go build -o bin/policy ./examples/plugins/policy
//
//	plugins:
//	  - id: policy
//	    name: external
//	    config:
//	      path: ./bin/policy
//	      config:
//	        rules:
//	          - { tool: "^shell$", arguments: "rm\\s+-rf", reason: "no recursive deletes" }
package main

import (
	"context"

	"github.com/vigil-run/vigil/plugins/external/sdk"
	"github.com/vigil-run/vigil/session"
)

func main() {
	var p policy
	sdk.Serve(&sdk.Plugin[Config]{
		Name:    "policy",
		Version: "1.0.0",
		Configure: func(_ context.Context, _ *sdk.Host, cfg Config) error {
			return p.configure(cfg)
		},
		Types:    []string{session.TypeToolCall},
		Validate: p.validate,
	})
}
