package openai

// The provider as it was written against the official SDK (up to
// 3c35574), kept as the oracle oracle_test.go holds our wire types to:
// the same inputs must give the same request and the same chunks.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/eventstream"
	"github.com/vigil-run/vigil/plugins/internal/providerhttp"
	"github.com/vigil-run/vigil/session"
)

// sdkProvider is the provider on the SDK's client.
type sdkProvider struct {
	cfg Config
	svc oai.ChatCompletionService
}

func newSDKProvider(cfg Config, opts ...Option) *sdkProvider {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	ropts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(providerhttp.ClientOf(opts)),
		option.WithMaxRetries(0),
		option.WithMiddleware(providerhttp.CheckStatus(cfg.APIKey), providerhttp.Bound(cfg.limits(), providerhttp.LoggerOf(opts))),
	}
	if cfg.APIKey != "" {
		ropts = append(ropts, option.WithAPIKey(cfg.APIKey))
	}
	return &sdkProvider{cfg: cfg, svc: oai.NewChatCompletionService(ropts...)}
}

func (p *sdkProvider) Stream(ctx context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	body, err := sdkParams(req, p.cfg.Model)
	if err != nil {
		return nil, &agentloop.ProviderError{Provider: providerName, Err: fmt.Errorf("building request: %w", err)}
	}
	s := p.svc.NewStreaming(ctx, body)
	if err := s.Err(); err != nil {
		_ = s.Close()
		return nil, p.fail(ctx, err, false)
	}
	return p.iterate(ctx, s), nil
}

// sdkParams is params as written against the SDK's param types.
func sdkParams(req *agentloop.Request, model string) (oai.ChatCompletionNewParams, error) {
	h := req.Header
	if h.Model != "" {
		model = h.Model
	}
	p := oai.ChatCompletionNewParams{
		Model:         shared.ChatModel(model),
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	msgs, err := sdkMessages(h.System, req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range h.Tools {
		tool, err := sdkFunctionTool(t)
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
	if rf, ok, err := sdkResponseFormat(h.OutputSchema); err != nil {
		return p, err
	} else if ok {
		p.ResponseFormat = rf
	}
	return p, nil
}

func sdkMessages(system string, msgs session.Messages) ([]oai.ChatCompletionMessageParamUnion, error) {
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

type sdkFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func sdkFunctionTool(t session.ToolSpec) (oai.ChatCompletionToolUnionParam, error) {
	f := sdkFunction{Name: t.Name, Description: t.Description}
	if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
		if !json.Valid(t.Parameters) {
			return oai.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		f.Parameters = t.Parameters
	}
	return oai.ChatCompletionFunctionTool(param.Override[shared.FunctionDefinitionParam](f)), nil
}

func sdkResponseFormat(schema json.RawMessage) (oai.ChatCompletionNewParamsResponseFormatUnion, bool, error) {
	s := bytes.TrimSpace(schema)
	if len(s) == 0 || string(s) == "null" {
		return oai.ChatCompletionNewParamsResponseFormatUnion{}, false, nil
	}
	var doc any
	if err := json.Unmarshal(s, &doc); err != nil {
		return oai.ChatCompletionNewParamsResponseFormatUnion{}, false, errors.New("output_schema is not valid JSON")
	}
	name := defaultFormatName
	if m, ok := doc.(map[string]any); ok {
		if t, ok := m["title"].(string); ok && formatName.MatchString(t) {
			name = t
		}
	}
	js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Schema: json.RawMessage(s)}
	if strictCompatible(doc) {
		js.Strict = param.NewOpt(true)
	}
	return oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}}, true, nil
}

// iterate adapts the SDK stream to an agentloop.Stream.
func (p *sdkProvider) iterate(ctx context.Context, s *ssestream.Stream[oai.ChatCompletionChunk]) agentloop.Stream {
	var d sdkDecoder
	return eventstream.Stream(ctx, providerName, s, eventstream.Decoder[oai.ChatCompletionChunk]{Decode: d.decode, End: d.end}, p.fail)
}

// sdkDecoder turns chat completion chunks into agentloop chunks. The zero
// value is ready to use.
type sdkDecoder struct {
	byIndex map[int64]int  // server tool-call index → our ordinal
	byID    map[string]int // tool-call id → our ordinal
	calls   []callState    // by ordinal
	last    int            // ordinal of the last fragment, for servers that send no index
	finish  string         // the server's finish_reason
	usage   *session.Usage
}

func (d *sdkDecoder) decode(c oai.ChatCompletionChunk) ([]agentloop.Chunk, error) {
	if raw := c.JSON.Choices.Raw(); raw != "" && raw != "null" && !c.JSON.Choices.Valid() {
		return nil, fmt.Errorf("%w: choices is not an array", ErrMalformedStream)
	}
	if c.JSON.Usage.Valid() {
		d.usage = &session.Usage{Input: int(c.Usage.PromptTokens), Output: int(c.Usage.CompletionTokens)}
	}
	var out []agentloop.Chunk
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // only one choice is ever requested
		}
		delta := ch.Delta
		if r, err := sdkReasoning(delta); err != nil {
			return nil, err
		} else if r != "" {
			out = append(out, agentloop.Chunk{Reasoning: r})
		}
		if delta.Content != "" {
			out = append(out, agentloop.Chunk{Text: delta.Content})
		}
		if delta.Refusal != "" {
			// A refusal is what the model says instead of an answer; the
			// user should read it like one.
			out = append(out, agentloop.Chunk{Text: delta.Refusal})
		}
		for _, tc := range delta.ToolCalls {
			if td := d.toolCall(tc); td != nil {
				out = append(out, agentloop.Chunk{ToolCall: td})
			}
		}
		if ch.FinishReason != "" {
			d.finish = ch.FinishReason
		}
	}
	return out, nil
}

func sdkReasoning(delta oai.ChatCompletionChunkChoiceDelta) (string, error) {
	for _, name := range reasoningFields {
		f, ok := delta.JSON.ExtraFields[name]
		if !ok {
			continue
		}
		raw := f.Raw()
		if raw == "" || raw == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			return "", fmt.Errorf("%w: %s is not a string", ErrMalformedStream, name)
		}
		return s, nil
	}
	return "", nil
}

// toolCall maps one tool-call fragment. ID and name are yielded once per
// call, however often the server repeats them. A fragment that carries
// nothing (some servers open the array with {}) is no call and is
// skipped before it can be numbered.
func (d *sdkDecoder) toolCall(tc oai.ChatCompletionChunkChoiceDeltaToolCall) *session.ChunkToolCall {
	if tc.ID == "" && tc.Function.Name == "" && tc.Function.Arguments == "" {
		return nil
	}
	o := d.ordinal(tc)
	st := &d.calls[o]
	td := &session.ChunkToolCall{Index: o, Arguments: tc.Function.Arguments}
	if tc.ID != "" && !st.id {
		td.ID, st.id = tc.ID, true
	}
	if tc.Function.Name != "" && !st.name {
		td.Name, st.name = tc.Function.Name, true
	}
	if td.Arguments != "" {
		st.args = true
	}
	if td.ID == "" && td.Name == "" && td.Arguments == "" {
		return nil
	}
	return td
}

// ordinal finds the call a fragment belongs to. Servers number calls by
// index, and the index wins: two calls may share an id (servers that say
// call_0 for each), and the loop makes ids unique. A server that sends no
// index (older Ollama) starts a call with each new id and continues the
// last call otherwise.
func (d *sdkDecoder) ordinal(tc oai.ChatCompletionChunkChoiceDeltaToolCall) int {
	if d.byIndex == nil {
		d.byIndex, d.byID = map[int64]int{}, map[string]int{}
	}
	indexed := tc.JSON.Index.Valid()
	o, known := -1, false
	switch {
	case indexed:
		o, known = d.byIndex[tc.Index]
	case tc.ID != "":
		o, known = d.byID[tc.ID]
	case len(d.calls) > 0:
		o, known = d.last, true
	}
	if !known {
		o = len(d.calls)
		d.calls = append(d.calls, callState{})
	}
	if indexed {
		d.byIndex[tc.Index] = o
	}
	if tc.ID != "" {
		d.byID[tc.ID] = o
	}
	d.last = o
	return o
}

// end returns the chunks that close the reply: "{}" for any call that got
// no arguments (a call of a tool without parameters must still carry a
// JSON object), then usage and the finish reason.
func (d *sdkDecoder) end() ([]agentloop.Chunk, error) {
	if d.finish == "" {
		return nil, fmt.Errorf("%w: stream ended without a finish reason", ErrMalformedStream)
	}
	var out []agentloop.Chunk
	for i, c := range d.calls {
		if !c.name {
			// Nothing can run a call without a tool's name.
			return nil, fmt.Errorf("%w: tool call %d has no name", ErrMalformedStream, i)
		}
		if !c.args {
			out = append(out, agentloop.Chunk{ToolCall: &session.ChunkToolCall{Index: i, Arguments: "{}"}})
		}
	}
	return append(out, agentloop.Chunk{Usage: d.usage, Finish: finishReason(d.finish, len(d.calls) > 0)}), nil
}

// fail turns err into a *agentloop.ProviderError whose text does not
// contain the API key (see providerhttp.Fail).
func (p *sdkProvider) fail(ctx context.Context, err error, delivered bool) error {
	return providerhttp.Fail(ctx, providerName, p.cfg.APIKey, err, delivered, func(err error) (int, string, bool, bool) {
		// An error event in a 200 stream: the server failed while
		// generating.
		var streamErr *ssestream.StreamError
		if !errors.As(err, &streamErr) {
			return 0, "", false, false
		}
		return 0, "server error while streaming: " + sdkStreamErrorMessage(streamErr), true, true
	})
}

// sdkStreamErrorMessage extracts error.message from an error event, falling
// back to the whole event.
func sdkStreamErrorMessage(e *ssestream.StreamError) string {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(e.Event.Data, &body) == nil && len(body.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		var s string
		if json.Unmarshal(body.Error, &s) == nil && s != "" {
			return s
		}
	}
	return strings.TrimSpace(string(e.Event.Data))
}
