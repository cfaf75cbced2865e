package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
	"github.com/vigil-run/vigil/session"
)

// The official SDK is the oracle of our wire types: for the same inputs,
// the SDK's own client (sdk_oracle_test.go) must send the same request
// and read the same reply.

// both returns our provider and the SDK's, configured alike, for srv.
func both(t require.TestingT, srv *providertest.Recorder, edit ...func(*Config)) (*Provider, *sdkProvider) {
	cfg := Config{BaseURL: srv.URL, APIKey: testKey, Model: "claude-sonnet-4-5"}
	for _, e := range edit {
		e(&cfg)
	}
	ours, err := New(cfg, WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	return ours, newSDKProvider(cfg, WithHTTPClient(srv.Client()))
}

// sdkService is the SDK's plain client for srv, without the provider's
// middleware.
func sdkService(srv *providertest.Server) *sdk.Client {
	c := sdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(srv.URL), option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0), option.WithAPIKey(testKey))
	return &c
}

func TestRequestIsTheSDKs(t *testing.T) {
	srv := providertest.NewRecorder(t)
	srv.Answer(fixture(t, "text"))
	tests := []struct {
		name string
		req  func() *agentloop.Request
		cfg  func(*Config)
	}{
		{"simple", simpleRequest, nil},
		{"full", fullRequest, nil},
		{"no key", simpleRequest, func(c *Config) { c.APIKey = "" }},
		{"base with a path", simpleRequest, func(c *Config) { c.BaseURL += "/proxy" }},
		{"base with a slash", simpleRequest, func(c *Config) { c.BaseURL += "/" }},
		{"config max tokens", simpleRequest, func(c *Config) { c.MaxTokens = 77 }},
		{"output schema", func() *agentloop.Request {
			r := fullRequest()
			r.Header.OutputSchema = json.RawMessage(` {"type": "object", "properties": {"a": {"type": "string", "description": "<&>"}}} `)
			return r
		}, nil},
		{"markup, controls and broken UTF-8", func() *agentloop.Request {
			r := fullRequest()
			r.Header.System = "<b>&amp;</b> \u2028\u2029 \x00\x1f \xff"
			r.Header.Tools[0].Description = "a < b && c > d"
			r.Header.Stop = []string{"</s>", "\t"}
			r.Messages = session.NewMessages([]session.Message{
				{Role: "user", Content: "<script>\xfe</script>"},
				{Role: "assistant", Reasoning: "not sent", ToolCalls: []session.ToolCall{{ID: "c<1>", Name: "f&", Arguments: `{"q":"<&>"}`}, {ID: "c2", Name: "g", Arguments: `{"cut":`}}},
				{Role: "tool", ToolCallID: "c<1>", Content: ""},
				{Role: "tool", ToolCallID: "c2", Content: "x"},
				{Role: "user", Content: ""},
			})
			return r
		}, nil},
		{"temperature tiny", func() *agentloop.Request {
			r := simpleRequest()
			r.Header.Temperature = ptr(1e-9)
			return r
		}, nil},
		{"no messages", func() *agentloop.Request { return &agentloop.Request{} }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var edit []func(*Config)
			if tt.cfg != nil {
				edit = append(edit, tt.cfg)
			}
			ours, theirs := both(t, srv, edit...)
			want := providertest.Sent(t, srv, theirs, tt.req())
			got := providertest.Sent(t, srv, ours, tt.req())
			providertest.AssertSameRequest(t, want, got)
			// And the SDK reads it back as its own parameters.
			var p sdk.MessageNewParams
			require.NoError(t, json.Unmarshal(got.Body, &p))
		})
	}
}

// drawRequest draws a request of any shape Vigil sends.
func drawRequest(t *rapid.T) *agentloop.Request {
	h := session.Header{
		Model:  rapid.SampledFrom([]string{"", "claude-opus-4-1", "m<&>"}).Draw(t, "model"),
		System: providertest.DrawText(t, "system"),
	}
	for range rapid.IntRange(0, 3).Draw(t, "tools") {
		h.Tools = append(h.Tools, session.ToolSpec{
			Name:        rapid.SampledFrom([]string{"f", "get_weather", "a<b"}).Draw(t, "tool"),
			Description: providertest.DrawText(t, "description"),
			Parameters:  json.RawMessage(rapid.SampledFrom(providertest.Schemas).Draw(t, "parameters")),
		})
	}
	if rapid.Bool().Draw(t, "temperature?") {
		h.Temperature = ptr(rapid.SampledFrom([]float64{0, 1, 0.2, 1e-7, 1.5, 123456789.25}).Draw(t, "temperature"))
	}
	h.MaxTokens = rapid.SampledFrom([]int{0, 1, 1024, 1 << 20}).Draw(t, "max tokens")
	h.Stop = rapid.SliceOfN(rapid.SampledFrom(providertest.Tricky), 0, 2).Draw(t, "stop")
	h.OutputSchema = json.RawMessage(rapid.SampledFrom(providertest.Schemas).Draw(t, "output schema"))
	var msgs []session.Message
	for range rapid.IntRange(0, 6).Draw(t, "messages") {
		m := session.Message{Role: rapid.SampledFrom([]string{session.RoleUser, session.RoleAssistant, session.RoleTool}).Draw(t, "role")}
		m.Content = providertest.DrawText(t, "content")
		switch m.Role {
		case session.RoleAssistant:
			m.Reasoning = providertest.DrawText(t, "reasoning")
			for range rapid.IntRange(0, 2).Draw(t, "calls") {
				m.ToolCalls = append(m.ToolCalls, session.ToolCall{
					ID:        rapid.SampledFrom([]string{"", "toolu_1", "toolu_<1>"}).Draw(t, "id"),
					Name:      rapid.SampledFrom([]string{"f", "a&b"}).Draw(t, "call"),
					Arguments: rapid.SampledFrom([]string{"", "{}", `{"a": "<&>"}`, `{"path":`, "[1]", " {\n} ", `{"s":"\u2028"}`}).Draw(t, "arguments"),
				})
			}
		case session.RoleTool:
			m.ToolCallID = rapid.SampledFrom([]string{"", "toolu_1"}).Draw(t, "tool call id")
			m.Name = "f"
		}
		msgs = append(msgs, m)
	}
	return &agentloop.Request{Header: h, Messages: session.NewMessages(msgs)}
}

// TestRequestIsTheSDKsForAnyConversation: whatever the conversation,
// the body is the JSON text the SDK's client sends for it.
func TestRequestIsTheSDKsForAnyConversation(t *testing.T) {
	srv := providertest.NewRecorder(t)
	ours, theirs := both(t, srv)
	providertest.CheckRequestsForAnyConversation(t, srv, ours, theirs, fixture(t, "text"), drawRequest)
}

// TestStreamsReadAsTheSDKReadsThem: every recorded stream gives the same
// chunks, or the same error, through our reader as through the SDK's
// stream and the decoder written against its types.
func TestStreamsReadAsTheSDKReadsThem(t *testing.T) {
	srv := providertest.NewRecorder(t)
	ours, theirs := both(t, srv)
	providertest.CheckRecordedStreams(t, srv, ours, theirs, simpleRequest)
}

// drawEvent draws one event of the Messages stream protocol, or a
// perturbation of one.
func drawEvent(t *rapid.T) (name string, data any) {
	typ := rapid.SampledFrom([]string{"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop", "ping", "error", "future_event"}).Draw(t, "type")
	index := rapid.IntRange(0, 2).Draw(t, "index")
	ev := map[string]any{"type": typ}
	switch typ {
	case "message_start":
		ev["message"] = map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "content": []any{}, "usage": drawUsage(t, true)}
	case "content_block_start":
		block := map[string]any{"type": rapid.SampledFrom([]string{"text", "thinking", "tool_use", "redacted_thinking"}).Draw(t, "block")}
		switch block["type"] {
		case "text":
			block["text"] = rapid.SampledFrom([]string{"", "Hi"}).Draw(t, "text")
		case "thinking":
			block["thinking"] = rapid.SampledFrom([]string{"", "Hmm"}).Draw(t, "thinking")
		case "tool_use":
			block["id"] = rapid.SampledFrom([]string{"toolu_1", "toolu_2"}).Draw(t, "id")
			block["name"] = rapid.SampledFrom([]string{"", "f", "g"}).Draw(t, "name")
			block["input"] = json.RawMessage(rapid.SampledFrom([]string{"{}", `{"a": 1}`, "null"}).Draw(t, "input"))
		}
		ev["index"], ev["content_block"] = index, block
	case "content_block_delta":
		delta := map[string]any{"type": rapid.SampledFrom([]string{"text_delta", "thinking_delta", "input_json_delta", "signature_delta"}).Draw(t, "delta")}
		switch delta["type"] {
		case "text_delta":
			delta["text"] = providertest.DrawText(t, "text")
		case "thinking_delta":
			delta["thinking"] = providertest.DrawText(t, "thinking")
		case "input_json_delta":
			delta["partial_json"] = rapid.SampledFrom([]string{"", "{", `"a":1`, "}"}).Draw(t, "partial json")
		case "signature_delta":
			delta["signature"] = "sig"
		}
		ev["index"], ev["delta"] = index, delta
	case "content_block_stop":
		ev["index"] = index
	case "message_delta":
		ev["delta"] = map[string]any{"stop_reason": rapid.SampledFrom([]any{nil, "end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "model_context_window_exceeded"}).Draw(t, "stop")}
		ev["usage"] = drawUsage(t, false)
	case "error":
		ev["error"] = map[string]any{"type": rapid.SampledFrom([]string{"overloaded_error", "api_error", "rate_limit_error", "timeout_error", "invalid_request_error", "new_error"}).Draw(t, "error type"), "message": rapid.SampledFrom([]string{"", "Overloaded"}).Draw(t, "error message")}
	}
	name = typ
	switch rapid.IntRange(0, 9).Draw(t, "name") {
	case 0:
		name = "" // servers that send no event line: the SDK skips these
	case 1:
		name = "message_delta" // a name that is not the data's type
	}
	return name, ev
}

func drawUsage(t *rapid.T, start bool) map[string]any {
	u := map[string]any{}
	for _, f := range []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} {
		switch rapid.IntRange(0, 2).Draw(t, f) {
		case 1:
			u[f] = nil
		case 2:
			u[f] = rapid.IntRange(0, 5000).Draw(t, f+" count")
		}
	}
	return u
}

// drawStream draws an event stream: mostly the protocol's order, with
// events out of it, framed every way server-sent events allow.
func drawStream(t *rapid.T) []byte {
	var b bytes.Buffer
	eol := rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(t, "eol")
	var events [][2]any
	if rapid.IntRange(0, 4).Draw(t, "typical") > 0 {
		events = append(events, [2]any{"message_start", map[string]any{"type": "message_start", "message": map[string]any{"usage": map[string]any{"input_tokens": 3, "output_tokens": 1}}}})
	}
	for range rapid.IntRange(0, 8).Draw(t, "events") {
		name, data := drawEvent(t)
		events = append(events, [2]any{name, data})
	}
	if rapid.IntRange(0, 3).Draw(t, "stopped") > 0 {
		events = append(events,
			[2]any{"message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}, "usage": map[string]any{"output_tokens": 9}}},
			[2]any{"message_stop", map[string]any{"type": "message_stop"}})
	}
	for _, ev := range events {
		data, err := json.Marshal(providertest.Perturb(t, ev[1]))
		if err != nil {
			t.Fatal(err)
		}
		if rapid.Bool().Draw(t, "comment") {
			b.WriteString(": keep-alive" + eol)
		}
		if name := ev[0].(string); name != "" {
			b.WriteString("event: " + name + eol)
		}
		for i, part := range strings.SplitAfter(string(data), ",") {
			if i > 0 && rapid.Bool().Draw(t, "one line") {
				b.Truncate(b.Len() - len(eol))
				b.WriteString(part + eol)
				continue
			}
			b.WriteString("data: " + part + eol)
		}
		b.WriteString(eol)
	}
	return b.Bytes()
}

// TestAnyStreamReadsAsTheSDKReadsIt: generated streams give the same
// chunks or the same error both ways.
func TestAnyStreamReadsAsTheSDKReadsIt(t *testing.T) {
	srv := providertest.NewRecorder(t)
	ours, theirs := both(t, srv)
	rapid.Check(t, func(t *rapid.T) {
		providertest.AssertSameReading(t, srv, ours, theirs, simpleRequest, drawStream(t))
	})
}

// TestRecordedStreamsAccumulateAsTheSDKsAccumulator: the reply the loop
// assembles from our chunks is the message the SDK's own Accumulate
// makes of the stream: text, thinking, tool calls, usage, stop reason.
func TestRecordedStreamsAccumulateAsTheSDKsAccumulator(t *testing.T) {
	// (Not unknown_block: the accumulator refuses a delta for a block type
	// it does not know; we skip the block.)
	for _, name := range []string{"text", "thinking", "tool_use", "tool_no_args", "max_tokens"} {
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewServer(t, sse(t, name), sse(t, name))
			client := sdkService(srv)
			var msg sdk.Message
			s := client.Messages.NewStreaming(context.Background(), sdk.MessageNewParams{Model: "m", MaxTokens: 1})
			for s.Next() {
				require.NoError(t, msg.Accumulate(s.Current()))
			}
			require.NoError(t, s.Err())

			chunks, err := providertest.Run(newProvider(t, srv), simpleRequest())
			require.NoError(t, err)
			got := providertest.Assemble(chunks)
			var text, thinking string
			var calls []session.ToolCall
			for _, b := range msg.Content {
				switch b.Type {
				case "text":
					text += b.Text
				case "thinking":
					thinking += b.Thinking
				case "tool_use":
					calls = append(calls, session.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
				}
			}
			assert.Equal(t, text, got.Text)
			assert.Equal(t, thinking, got.Reasoning)
			require.Len(t, got.ToolCalls, len(calls))
			for i, c := range calls {
				assert.Equal(t, c.ID, got.ToolCalls[i].ID)
				assert.Equal(t, c.Name, got.ToolCalls[i].Name)
				assert.JSONEq(t, c.Arguments, got.ToolCalls[i].Arguments)
			}
			u := msg.Usage
			require.NotNil(t, got.Usage)
			assert.Equal(t, session.Usage{Input: int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens), Output: int(u.OutputTokens)}, *got.Usage)
			assert.Equal(t, finishReason(string(msg.StopReason), len(calls) > 0), got.Finish)
		})
	}
}

// TestErrorBodiesReadAsTheSDKReadsThem: an error response gives the
// status and message the SDK's own error gives.
func TestErrorBodiesReadAsTheSDKReadsThem(t *testing.T) {
	tests := []providertest.Reply{
		jsonReply(http.StatusTooManyRequests, rateLimitBody, "Retry-After", "12"),
		jsonReply(400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"},"request_id":"req_1"}`, "Request-Id", "req_1"),
		jsonReply(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`),
		jsonReply(404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`),
		jsonReply(500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`),
		jsonReply(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
	}
	for _, reply := range tests {
		t.Run(http.StatusText(reply.Status), func(t *testing.T) {
			srv := providertest.NewServer(t, reply, reply)
			s := sdkService(srv).Messages.NewStreaming(context.Background(), sdk.MessageNewParams{Model: "m", MaxTokens: 1})
			var apiErr *sdk.Error
			require.True(t, errors.As(s.Err(), &apiErr), "%v", s.Err())

			_, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
			var pe *agentloop.ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, apiErr.StatusCode, pe.Status)
			require.NotEmpty(t, apiErr.Message)
			assert.Equal(t, apiErr.Message, pe.Err.Error())
		})
	}
}
