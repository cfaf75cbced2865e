package anthropic

// The provider as it was written against the official SDK (up to
// 3c35574), kept as the oracle oracle_test.go holds our wire types to:
// the same inputs must give the same request and the same chunks.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/eventstream"
	"github.com/vigil-run/vigil/plugins/internal/providerhttp"
	"github.com/vigil-run/vigil/session"
)

// sdkProvider is the provider on the SDK's client.
type sdkProvider struct {
	cfg    Config
	client sdk.Client
}

func newSDKProvider(cfg Config, opts ...Option) *sdkProvider {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	ropts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithHTTPClient(providerhttp.ClientOf(opts)),
		option.WithMaxRetries(0),
		option.WithMiddleware(providerhttp.CheckStatus(cfg.APIKey), providerhttp.Bound(cfg.limits(), providerhttp.LoggerOf(opts))),
	}
	if cfg.APIKey != "" {
		ropts = append(ropts, option.WithAPIKey(cfg.APIKey))
	}
	return &sdkProvider{cfg: cfg, client: sdk.NewClient(ropts...)}
}

func (p *sdkProvider) Stream(ctx context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	body, err := sdkParams(req, p.cfg)
	if err != nil {
		return nil, &agentloop.ProviderError{Provider: providerName, Err: fmt.Errorf("building request: %w", err)}
	}
	s := p.client.Messages.NewStreaming(ctx, body)
	if err := s.Err(); err != nil {
		_ = s.Close()
		return nil, p.fail(ctx, err, false)
	}
	return p.iterate(ctx, s), nil
}

// sdkParams is params as written against the SDK's param types.
func sdkParams(req *agentloop.Request, cfg Config) (sdk.MessageNewParams, error) {
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
	msgs, err := sdkMessages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range h.Tools {
		tool, err := sdkToolParam(t)
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
		p.OutputConfig.Format = param.Override[sdk.JSONOutputFormatParam](sdkOutputFormat{Type: "json_schema", Schema: json.RawMessage(s)})
	}
	return p, nil
}

type sdkOutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

func sdkMessages(msgs session.Messages) ([]sdk.MessageParam, error) {
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

type sdkTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func sdkToolParam(t session.ToolSpec) (sdk.ToolUnionParam, error) {
	schema := emptySchema
	if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && string(p) != "null" {
		if !json.Valid(p) {
			return sdk.ToolUnionParam{}, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		schema = t.Parameters
	}
	tp := param.Override[sdk.ToolParam](sdkTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	return sdk.ToolUnionParam{OfTool: &tp}, nil
}

// iterate adapts the SDK stream to an agentloop.Stream.
func (p *sdkProvider) iterate(ctx context.Context, s *ssestream.Stream[sdk.MessageStreamEventUnion]) agentloop.Stream {
	var d sdkDecoder
	end := func() ([]agentloop.Chunk, error) {
		final, err := d.end()
		if err != nil {
			return nil, err
		}
		return []agentloop.Chunk{final}, nil
	}
	return eventstream.Stream(ctx, providerName, s, eventstream.Decoder[sdk.MessageStreamEventUnion]{Decode: d.decode, End: end}, p.fail)
}

// sdkDecoder turns Messages API stream events into agentloop chunks. The
// zero value is ready to use.
type sdkDecoder struct {
	started bool
	blocks  map[int64]*block
	calls   int // tool_use blocks so far
	input   int // input tokens, cache reads and writes included
	output  int
	stop    string // the API's stop_reason
	stopped bool   // message_stop seen
}

func (d *sdkDecoder) decode(ev sdk.MessageStreamEventUnion) ([]agentloop.Chunk, error) {
	switch ev.Type {
	case "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
	default:
		// The API adds event types over time and documents that clients
		// should skip the ones they do not know.
		return nil, nil
	}
	if ev.Type != "message_start" && !d.started {
		return nil, fmt.Errorf("%w: %s before message_start", ErrMalformedStream, ev.Type)
	}
	if d.stopped {
		return nil, fmt.Errorf("%w: %s after message_stop", ErrMalformedStream, ev.Type)
	}
	switch ev.Type {
	case "message_start":
		if d.started {
			return nil, fmt.Errorf("%w: second message_start", ErrMalformedStream)
		}
		d.started = true
		d.blocks = map[int64]*block{}
		u := ev.Message.Usage
		d.input = int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
		d.output = int(u.OutputTokens)
	case "content_block_start":
		return d.start(ev)
	case "content_block_delta":
		return d.delta(ev)
	case "content_block_stop":
		b, ok := d.blocks[ev.Index]
		if !ok {
			return nil, fmt.Errorf("%w: content_block_stop for unknown block %d", ErrMalformedStream, ev.Index)
		}
		if b.kind == "tool_use" && !b.args {
			// A call of a tool without parameters still carries a JSON
			// object, so the loop can parse it.
			b.args = true
			return []agentloop.Chunk{{ToolCall: &session.ChunkToolCall{Index: b.call, Arguments: "{}"}}}, nil
		}
	case "message_delta":
		if r := ev.Delta.StopReason; r != "" {
			d.stop = string(r)
		}
		// Usage here is cumulative. Input counts arrive here too on
		// newer API versions (and on servers that only count at the end).
		u := ev.Usage
		if u.JSON.OutputTokens.Valid() {
			d.output = int(u.OutputTokens)
		}
		if u.JSON.InputTokens.Valid() && u.InputTokens > 0 {
			d.input = int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
		}
	case "message_stop":
		d.stopped = true
	}
	return nil, nil
}

func (d *sdkDecoder) start(ev sdk.MessageStreamEventUnion) ([]agentloop.Chunk, error) {
	if _, dup := d.blocks[ev.Index]; dup {
		return nil, fmt.Errorf("%w: content block %d started twice", ErrMalformedStream, ev.Index)
	}
	cb := ev.ContentBlock
	b := &block{kind: cb.Type}
	d.blocks[ev.Index] = b
	switch cb.Type {
	case "text":
		if cb.Text != "" {
			return []agentloop.Chunk{{Text: cb.Text}}, nil
		}
	case "thinking":
		if cb.Thinking != "" {
			return []agentloop.Chunk{{Reasoning: cb.Thinking}}, nil
		}
	case "tool_use":
		if cb.Name == "" {
			// Nothing can run a call without a tool's name.
			return nil, fmt.Errorf("%w: tool_use block %d has no name", ErrMalformedStream, ev.Index)
		}
		b.call = d.calls
		d.calls++
		td := &session.ChunkToolCall{Index: b.call, ID: cb.ID, Name: cb.Name}
		// The API starts every call with an empty input and streams it;
		// a server that sends the whole input up front is taken at its
		// word.
		if raw := cb.JSON.Input.Raw(); raw != "" && raw != "{}" && raw != "null" {
			td.Arguments, b.args = raw, true
		}
		return []agentloop.Chunk{{ToolCall: td}}, nil
	}
	return nil, nil
}

func (d *sdkDecoder) delta(ev sdk.MessageStreamEventUnion) ([]agentloop.Chunk, error) {
	b, ok := d.blocks[ev.Index]
	if !ok {
		return nil, fmt.Errorf("%w: delta for unknown content block %d", ErrMalformedStream, ev.Index)
	}
	want := map[string]string{
		"text_delta":       "text",
		"thinking_delta":   "thinking",
		"input_json_delta": "tool_use",
	}[ev.Delta.Type]
	if want != "" && want != b.kind {
		return nil, fmt.Errorf("%w: %s for a %s block", ErrMalformedStream, ev.Delta.Type, b.kind)
	}
	switch ev.Delta.Type {
	case "text_delta":
		if ev.Delta.Text != "" {
			return []agentloop.Chunk{{Text: ev.Delta.Text}}, nil
		}
	case "thinking_delta":
		if ev.Delta.Thinking != "" {
			return []agentloop.Chunk{{Reasoning: ev.Delta.Thinking}}, nil
		}
	case "input_json_delta":
		if ev.Delta.PartialJSON != "" {
			b.args = true
			return []agentloop.Chunk{{ToolCall: &session.ChunkToolCall{Index: b.call, Arguments: ev.Delta.PartialJSON}}}, nil
		}
	}
	// signature_delta and citations_delta carry nothing the loop keeps.
	return nil, nil
}

// end returns the final chunk, or an error if the stream stopped short.
func (d *sdkDecoder) end() (agentloop.Chunk, error) {
	if !d.stopped {
		return agentloop.Chunk{}, fmt.Errorf("%w: stream ended before message_stop", ErrMalformedStream)
	}
	if d.stop == "" {
		return agentloop.Chunk{}, fmt.Errorf("%w: message ended without a stop_reason", ErrMalformedStream)
	}
	return agentloop.Chunk{
		Usage:  &session.Usage{Input: d.input, Output: d.output},
		Finish: finishReason(d.stop, d.calls > 0),
	}, nil
}

// fail turns err into a *agentloop.ProviderError whose text does not
// contain the API key (see providerhttp.Fail).
func (p *sdkProvider) fail(ctx context.Context, err error, delivered bool) error {
	return providerhttp.Fail(ctx, providerName, p.cfg.APIKey, err, delivered, func(err error) (int, string, bool, bool) {
		// An error event inside a 200 stream; the SDK parsed it.
		var apiErr *sdk.Error
		if !errors.As(err, &apiErr) {
			return 0, "", false, false
		}
		msg := apiErr.Message
		if msg == "" {
			msg = string(apiErr.Type())
		}
		status := streamErrorStatus[string(apiErr.Type())]
		return status, "error while streaming: " + msg, providerhttp.RetryableStatus(status), true
	})
}
