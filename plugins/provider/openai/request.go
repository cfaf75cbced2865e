package openai

import (
	"encoding/json"
	"fmt"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// params maps a request to Chat Completions parameters. model is the
// fallback when the header names none.
func params(req *agentloop.Request, model string) (oai.ChatCompletionNewParams, error) {
	h := req.Header
	if h.Model != "" {
		model = h.Model
	}
	p := oai.ChatCompletionNewParams{
		Model:         shared.ChatModel(model),
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
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
		p.Temperature = param.NewOpt(*h.Temperature)
	}
	if h.MaxTokens > 0 {
		p.MaxTokens = param.NewOpt(int64(h.MaxTokens))
	}
	if len(h.Stop) > 0 {
		p.Stop = oai.ChatCompletionNewParamsStopUnion{OfStringArray: h.Stop}
	}
	if rf, ok, err := responseFormat(h.OutputSchema); err != nil {
		return p, err
	} else if ok {
		p.ResponseFormat = rf
	}
	return p, nil
}

// messages maps the system prompt and the derived messages, in order.
//
// An assistant message's reasoning goes back as reasoning_content, the
// field it arrived in: DeepSeek's thinking mode refuses a conversation
// whose tool-calling turns lack it. The field is not part of the OpenAI
// schema, so it is sent only when there is reasoning, which OpenAI
// itself never produces.
func messages(system string, msgs session.Messages) ([]oai.ChatCompletionMessageParamUnion, error) {
	out := make([]oai.ChatCompletionMessageParamUnion, 0, msgs.Len()+1)
	if system != "" {
		out = append(out, oai.SystemMessage(system))
	}
	for i, m := range msgs.All() {
		switch m.Role {
		case session.RoleUser:
			u := oai.ChatCompletionUserMessageParam{}
			u.Content.OfString = param.NewOpt(m.Content)
			if m.Name != "" {
				u.Name = param.NewOpt(m.Name)
			}
			out = append(out, oai.ChatCompletionMessageParamUnion{OfUser: &u})
		case session.RoleAssistant:
			a := oai.ChatCompletionAssistantMessageParam{}
			// Content may be absent only when the message calls tools.
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(m.Content)
			}
			if m.Reasoning != "" {
				a.SetExtraFields(map[string]any{"reasoning_content": m.Reasoning})
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      tc.Name,
							Arguments: tc.Arguments,
						},
					},
				})
			}
			out = append(out, oai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case session.RoleTool:
			// The tool's name has no place in a tool message: the call id
			// ties it to the call, which names the tool.
			out = append(out, oai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

// function is a function definition with its parameters kept as the
// exact JSON Schema text the tool declared.
type function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func functionTool(t session.ToolSpec) (oai.ChatCompletionToolUnionParam, error) {
	f := function{Name: t.Name, Description: t.Description}
	if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
		if !json.Valid(t.Parameters) {
			return oai.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		f.Parameters = t.Parameters
	}
	return oai.ChatCompletionFunctionTool(param.Override[shared.FunctionDefinitionParam](f)), nil
}
