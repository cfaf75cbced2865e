package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// params maps a request to Messages API parameters, with the config's
// model and max_tokens as fallbacks.
func params(req *agentloop.Request, cfg Config) (sdk.MessageNewParams, error) {
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
	p := sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: int64(maxTokens)}
	if h.System != "" {
		p.System = []sdk.TextBlockParam{{Text: h.System}}
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
		// This SDK version has no temperature field (the API deprecates
		// it), but the header is model-visible and is sent as logged.
		p.SetExtraFields(map[string]any{"temperature": *h.Temperature})
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
		p.OutputConfig.Format = param.Override[sdk.JSONOutputFormatParam](outputFormat{Type: "json_schema", Schema: json.RawMessage(s)})
	}
	return p, nil
}

// outputFormat is output_config.format with its schema kept as the exact
// JSON Schema text of the request header.
type outputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// messages maps derived messages to Messages API turns. Tool results are
// tool_result blocks of a user turn, and consecutive messages of one role
// share a turn, as the API requires.
//
// Reasoning is not sent back: thinking blocks are only accepted with the
// signature the API issued, which the session log does not keep.
func messages(msgs session.Messages) ([]sdk.MessageParam, error) {
	var out []sdk.MessageParam
	add := func(user bool, blocks ...sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		n := len(out)
		switch {
		case user && n > 0 && out[n-1].OfUser != nil:
			out[n-1].OfUser.Content = append(out[n-1].OfUser.Content, blocks...)
		case !user && n > 0 && out[n-1].OfAssistant != nil:
			out[n-1].OfAssistant.Content = append(out[n-1].OfAssistant.Content, blocks...)
		case user:
			out = append(out, sdk.NewUserMessage(blocks...))
		default:
			out = append(out, sdk.NewAssistantMessage(blocks...))
		}
	}
	for i, m := range msgs.All() {
		switch m.Role {
		case session.RoleUser:
			add(true, sdk.NewTextBlock(m.Content))
		case session.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			// The API refuses empty text blocks; a message that only
			// calls tools has none.
			if m.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
			}
			add(false, blocks...)
		case session.RoleTool:
			r := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Content != "" {
				r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Content}}}
			}
			add(true, sdk.ContentBlockParamUnion{OfToolResult: &r})
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

// tool is a tool definition with its input schema kept as the exact JSON
// Schema text the tool declared.
type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// emptySchema is the schema of a tool without parameters: the API
// requires one.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func toolParam(t session.ToolSpec) (sdk.ToolUnionParam, error) {
	schema := emptySchema
	if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && string(p) != "null" {
		if !json.Valid(p) {
			return sdk.ToolUnionParam{}, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		schema = t.Parameters
	}
	tp := param.Override[sdk.ToolParam](tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	return sdk.ToolUnionParam{OfTool: &tp}, nil
}
