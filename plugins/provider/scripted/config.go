package scripted

import (
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/plugins/internal/yamljson"
)

// Config is the plugin's config.
type Config struct {
	// Script lists the replies, one per model call. Empty: the default
	// script (list the folder, then describe it).
	Script []Reply `yaml:"script" doc:"Lists the replies, one per model call. Empty: the default script (list the folder, then describe it)."`
	// Repeat starts the script over when it is used up; otherwise a call
	// past its end fails.
	Repeat bool `yaml:"repeat" doc:"Starts the script over when it is used up; otherwise a call past its end fails."`
}

// Reply is one scripted model reply.
type Reply struct {
	Text      string     `yaml:"text" doc:"The reply's text."`
	Reasoning string     `yaml:"reasoning" doc:"Reasoning streamed before the text, as a model's thinking."`
	ToolCalls []ToolCall `yaml:"tool_calls" doc:"The tools the reply calls, in order."`
	// Error, when set, makes the call fail instead (after streaming
	// Error.After chunks of the reply).
	Error *Failure `yaml:"error" doc:"When set, makes the call fail instead (after streaming Error.After chunks of the reply)."`
}

// ToolCall is a scripted tool call.
type ToolCall struct {
	Name string `yaml:"name" doc:"The tool called."`
	// Arguments is a mapping, sent as its JSON encoding, or a string,
	// sent as is (even when it is not valid JSON: tests use that).
	Arguments any `yaml:"arguments" doc:"A mapping, sent as its JSON encoding, or a string, sent as is (even when it is not valid JSON: tests use that)."`
}

// Failure is a scripted provider failure.
type Failure struct {
	// Status is the HTTP-like status; 429 and 5xx are retryable when they
	// come before any chunk.
	Status  int    `yaml:"status" doc:"The HTTP-like status; 429 and 5xx are retryable when they come before any chunk."`
	Message string `yaml:"message" doc:"The error's message."`
	// After is how many chunks of the reply are streamed before the
	// failure; 0 fails the call itself.
	After int `yaml:"after" doc:"How many chunks of the reply are streamed before the failure; 0 fails the call itself."`
}

// Validate checks the config.
func (c *Config) Validate() error {
	var errs []error
	for i, r := range c.Script {
		if r.Text == "" && r.Reasoning == "" && len(r.ToolCalls) == 0 && r.Error == nil {
			errs = append(errs, fmt.Errorf("script[%d]: a reply needs text, reasoning, tool_calls or error", i))
		}
		for j, tc := range r.ToolCalls {
			if tc.Name == "" {
				errs = append(errs, fmt.Errorf("script[%d].tool_calls[%d]: name is required", i, j))
			}
			if _, err := argumentsJSON(tc.Arguments); err != nil {
				errs = append(errs, fmt.Errorf("script[%d].tool_calls[%d].arguments: %w", i, j, err))
			}
		}
		if f := r.Error; f != nil && (f.After < 0 || f.Status < 0) {
			errs = append(errs, fmt.Errorf("script[%d].error: status and after must not be negative", i))
		}
	}
	return errors.Join(errs...)
}

// argumentsJSON renders scripted arguments as the JSON text a model
// would send.
func argumentsJSON(v any) (string, error) {
	switch a := v.(type) {
	case nil:
		return "{}", nil
	case string:
		return a, nil
	}
	b, err := yamljson.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
