package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// params maps a request to Messages API parameters, with the config's
// model and max_tokens as fallbacks.
func params(req *agentloop.Request, cfg Config) (messagesRequest, error) {
	h := req.Header
	model := cfg.Model
	if h.Model != "" {
		model = h.Model
	}
	maxTokens := h.MaxTokens
	if maxTokens <= 0 {
		maxTokens = cfg.MaxTokens
	}
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	p := messagesRequest{Model: model, MaxTokens: int64(maxTokens), Stream: true}
	if h.System != "" {
		p.System = []textBlock{text(h.System)}
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range h.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, tool)
	}
	if h.Temperature != nil {
		// The API deprecates temperature, but the header is model-visible
		// and is sent as logged.
		t := *h.Temperature
		p.Temperature = &t
	}
	if len(h.Stop) > 0 {
		p.StopSequences = h.Stop
	}
	if s := bytes.TrimSpace(h.OutputSchema); len(s) > 0 && string(s) != "null" {
		if !json.Valid(s) {
			return p, fmt.Errorf("output_schema is not valid JSON")
		}
		// Structured outputs: output_config.format, the schema sent as
		// the exact text the header holds.
		p.OutputConfig = &outputConfig{Format: outputFormat{Type: "json_schema", Schema: json.RawMessage(s)}}
	}
	return p, nil
}

// messages maps derived messages to Messages API turns. Tool results are
// tool_result blocks of a user turn, and consecutive messages of one role
// share a turn, as the API requires.
//
// Reasoning is not sent back: thinking blocks are only accepted with the
// signature the API issued, which the session log does not keep.
func messages(msgs session.Messages) ([]turn, error) {
	var out []turn
	add := func(role string, blocks ...contentParam) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, turn{Content: blocks, Role: role})
	}
	for i, m := range msgs.All() {
		switch m.Role {
		case session.RoleUser:
			add("user", text(m.Content))
		case session.RoleAssistant:
			var blocks []contentParam
			// The API refuses empty text blocks; a message that only
			// calls tools has none.
			if m.Content != "" {
				blocks = append(blocks, text(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, toolUseBlock{ID: tc.ID, Input: toolInput(tc.Arguments), Name: tc.Name, Type: "tool_use"})
			}
			add("assistant", blocks...)
		case session.RoleTool:
			r := toolResultBlock{ToolUseID: m.ToolCallID, Type: "tool_result"}
			if m.Content != "" {
				r.Content = []textBlock{text(m.Content)}
			}
			add("user", r)
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

// toolInput is a tool call's arguments as the JSON object tool_use.input
// must be. Arguments that are not an object (a reply cut off mid-call)
// are sent as {}: the call's error result already tells the model what
// went wrong, and the request must stay valid for the conversation to go
// on.
func toolInput(args string) json.RawMessage {
	b := bytes.TrimSpace([]byte(args))
	if len(b) > 0 && b[0] == '{' && json.Valid(b) {
		return json.RawMessage(args)
	}
	return json.RawMessage(`{}`)
}

// emptySchema is the schema of a tool without parameters: the API
// requires one.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func toolParam(t session.ToolSpec) (tool, error) {
	schema := emptySchema
	if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && string(p) != "null" {
		if !json.Valid(p) {
			return tool{}, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		schema = t.Parameters
	}
	return tool{Name: t.Name, Description: t.Description, InputSchema: schema}, nil
}
