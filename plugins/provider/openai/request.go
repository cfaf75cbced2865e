package openai

import (
	"encoding/json"
	"fmt"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// params maps a request to Chat Completions parameters. model is the
// fallback when the header names none.
func params(req *agentloop.Request, model string) (chatRequest, error) {
	h := req.Header
	if h.Model != "" {
		model = h.Model
	}
	p := chatRequest{
		Model:         model,
		StreamOptions: streamOptions{IncludeUsage: true},
		Stream:        true,
	}
	msgs, err := messages(h.System, req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range h.Tools {
		tool, err := functionTool(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, tool)
	}
	if h.Temperature != nil {
		t := *h.Temperature
		p.Temperature = &t
	}
	if h.MaxTokens > 0 {
		p.MaxTokens = int64(h.MaxTokens)
	}
	if len(h.Stop) > 0 {
		p.Stop = h.Stop
	}
	rf, err := responseFormat(h.OutputSchema)
	if err != nil {
		return p, err
	}
	p.ResponseFormat = rf
	return p, nil
}

// messages maps the system prompt and the derived messages, in order.
//
// An assistant message's reasoning goes back as reasoning_content, the
// field it arrived in: DeepSeek's thinking mode refuses a conversation
// whose tool-calling turns lack it. The field is not part of the OpenAI
// schema, so it is sent only when there is reasoning, which OpenAI
// itself never produces.
func messages(system string, msgs session.Messages) ([]message, error) {
	out := make([]message, 0, msgs.Len()+1)
	if system != "" {
		out = append(out, message{Role: "system", Content: &system})
	}
	for i, m := range msgs.All() {
		switch m.Role {
		case session.RoleUser:
			out = append(out, message{Role: "user", Content: &m.Content, Name: m.Name})
		case session.RoleAssistant:
			a := message{Role: "assistant", Reasoning: extraString(m.Reasoning)}
			// Content may be absent only when the message calls tools.
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content = &m.Content
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, toolCall{
					ID:       tc.ID,
					Function: functionCall{Name: tc.Name, Arguments: tc.Arguments},
					Type:     "function",
				})
			}
			out = append(out, a)
		case session.RoleTool:
			// The tool's name has no place in a tool message: the call id
			// ties it to the call, which names the tool.
			out = append(out, message{Role: "tool", Content: &m.Content, ToolCallID: &m.ToolCallID})
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

func functionTool(t session.ToolSpec) (tool, error) {
	f := function{Name: t.Name, Description: t.Description}
	if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
		if !json.Valid(t.Parameters) {
			return tool{}, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		f.Parameters = t.Parameters
	}
	return tool{Function: f, Type: "function"}, nil
}
