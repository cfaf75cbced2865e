package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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
	cfg := Config{BaseURL: srv.URL + "/v1", APIKey: testKey, Model: "gpt-4o-mini"}
	for _, e := range edit {
		e(&cfg)
	}
	ours, err := New(cfg, WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	return ours, newSDKProvider(cfg, WithHTTPClient(srv.Client()))
}

func TestRequestIsTheSDKs(t *testing.T) {
	srv := providertest.NewRecorder(t)
	srv.Answer(fixture(t, "text"))
	strictSchema := json.RawMessage(` {"title": "Answer", "type":"object","properties":{"a":{"type":"string","enum":["x","<y>"]}},"required":["a"],"additionalProperties":false} `)
	tests := []struct {
		name string
		req  func() *agentloop.Request
		cfg  func(*Config)
	}{
		{"simple", simpleRequest, nil},
		{"full", fullRequest, nil},
		{"no key", simpleRequest, func(c *Config) { c.APIKey = "" }},
		{"base without a path", simpleRequest, func(c *Config) { c.BaseURL = strings.TrimSuffix(c.BaseURL, "/v1") }},
		{"base with a slash", simpleRequest, func(c *Config) { c.BaseURL += "/" }},
		{"strict output schema", func() *agentloop.Request {
			r := fullRequest()
			r.Header.OutputSchema = strictSchema
			return r
		}, nil},
		{"open output schema", func() *agentloop.Request {
			r := simpleRequest()
			r.Header.OutputSchema = json.RawMessage(`{"title":"not a name!","type":"object"}`)
			return r
		}, nil},
		{"markup, controls and broken UTF-8", func() *agentloop.Request {
			r := fullRequest()
			r.Header.System = "<b>&amp;</b> \u2028\u2029 \x00\x1f \xff"
			r.Header.Tools[0].Description = "a < b && c > d"
			r.Header.Stop = []string{"</s>", "\t"}
			r.Messages = session.NewMessages([]session.Message{
				{Role: "user", Content: "<script>\xfe</script>", Name: "a&b"},
				{Role: "assistant", Reasoning: "x < y \xff", ToolCalls: []session.ToolCall{{ID: "c<1>", Name: "f&", Arguments: `{"q":"<&>"}`}}},
				{Role: "tool", ToolCallID: "c<1>", Content: ""},
				{Role: "user", Content: ""},
			})
			return r
		}, nil},
		{"temperature zero and tiny", func() *agentloop.Request {
			r := simpleRequest()
			r.Header.Temperature = ptr(1e-9)
			r.Header.MaxTokens = 1
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
			ours, sdk := both(t, srv, edit...)
			want := providertest.Sent(t, srv, sdk, tt.req())
			got := providertest.Sent(t, srv, ours, tt.req())
			providertest.AssertSameRequest(t, want, got)
			// And the SDK reads it back as its own parameters.
			var p oai.ChatCompletionNewParams
			require.NoError(t, json.Unmarshal(got.Body, &p))
		})
	}
}

// drawRequest draws a request of any shape Vigil sends.
func drawRequest(t *rapid.T) *agentloop.Request {
	h := session.Header{
		Model:  rapid.SampledFrom([]string{"", "gpt-4o", "deepseek-chat", "m<&>"}).Draw(t, "model"),
		System: providertest.DrawText(t, "system"),
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "tools") {
		h.Tools = append(h.Tools, session.ToolSpec{
			Name:        rapid.SampledFrom([]string{"f", "get_weather", "a<b"}).Draw(t, "tool"),
			Description: providertest.DrawText(t, "description"),
			Parameters:  json.RawMessage(rapid.SampledFrom(providertest.Schemas).Draw(t, "parameters")),
		})
		_ = i
	}
	if rapid.Bool().Draw(t, "temperature?") {
		h.Temperature = ptr(rapid.SampledFrom([]float64{0, 1, 0.2, 1e-7, 1.5, 123456789.25}).Draw(t, "temperature"))
	}
	h.MaxTokens = rapid.SampledFrom([]int{0, 1, 1024, 1 << 20}).Draw(t, "max tokens")
	h.Stop = rapid.SliceOfN(rapid.SampledFrom(providertest.Tricky), 0, 2).Draw(t, "stop")
	h.OutputSchema = json.RawMessage(rapid.SampledFrom(append(providertest.Schemas, `{"title":"Named_1","type":"object","properties":{},"additionalProperties":false}`)).Draw(t, "output schema"))
	var msgs []session.Message
	for range rapid.IntRange(0, 6).Draw(t, "messages") {
		m := session.Message{Role: rapid.SampledFrom([]string{session.RoleUser, session.RoleAssistant, session.RoleTool}).Draw(t, "role")}
		m.Content = providertest.DrawText(t, "content")
		switch m.Role {
		case session.RoleUser:
			m.Name = rapid.SampledFrom([]string{"", "ada", "<n>"}).Draw(t, "name")
		case session.RoleAssistant:
			m.Reasoning = providertest.DrawText(t, "reasoning")
			for range rapid.IntRange(0, 2).Draw(t, "calls") {
				m.ToolCalls = append(m.ToolCalls, session.ToolCall{
					ID:        rapid.SampledFrom([]string{"", "call_1", "toolu_<1>"}).Draw(t, "id"),
					Name:      rapid.SampledFrom([]string{"f", "a&b"}).Draw(t, "call"),
					Arguments: rapid.SampledFrom([]string{"", "{}", `{"a": "<&>"}`, `{"path":`, "[1]", " {\n} "}).Draw(t, "arguments"),
				})
			}
		case session.RoleTool:
			m.ToolCallID = rapid.SampledFrom([]string{"", "call_1"}).Draw(t, "tool call id")
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
	ours, sdk := both(t, srv)
	providertest.CheckRequestsForAnyConversation(t, srv, ours, sdk, fixture(t, "text"), drawRequest)
}

// TestStreamsReadAsTheSDKReadsThem: every recorded stream gives the same
// chunks, or the same error, through our reader as through the SDK's
// stream and the decoder written against its types.
func TestStreamsReadAsTheSDKReadsThem(t *testing.T) {
	srv := providertest.NewRecorder(t)
	ours, sdk := both(t, srv)
	providertest.CheckRecordedStreams(t, srv, ours, sdk, simpleRequest)
}

// drawStream draws a stream of chunks as servers send them, framed in
// every way server-sent events allow.
func drawStream(t *rapid.T) []byte {
	var b bytes.Buffer
	eol := rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(t, "eol")
	for range rapid.IntRange(0, 8).Draw(t, "events") {
		data := drawChunk(t)
		if rapid.IntRange(0, 15).Draw(t, "special") == 0 {
			data = rapid.SampledFrom([]string{"[DONE]", `{"error":{"message":"boom","type":"server_error"}}`, `{"error":"flat"}`, `not json`, `[]`, `5`, `{"choices":"x"}`}).Draw(t, "special event")
		}
		if rapid.Bool().Draw(t, "comment") {
			b.WriteString(": keep-alive" + eol)
		}
		if rapid.Bool().Draw(t, "named") {
			b.WriteString("event: " + rapid.SampledFrom([]string{"message", "error", "completion"}).Draw(t, "event") + eol)
		}
		// Data may come in several lines, split where JSON allows space.
		for i, part := range strings.SplitAfter(data, ",") {
			sep := "data: "
			if i > 0 && rapid.Bool().Draw(t, "one line") {
				b.Truncate(b.Len() - len(eol))
				sep = ""
			} else if rapid.Bool().Draw(t, "no space") {
				sep = "data:"
			}
			b.WriteString(sep + part + eol)
		}
		b.WriteString(eol)
	}
	if rapid.Bool().Draw(t, "done") {
		b.WriteString("data: [DONE]" + eol + eol)
	}
	return b.Bytes()
}

func drawChunk(t *rapid.T) string {
	c := map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk"}
	var choices []any
	for range rapid.IntRange(0, 2).Draw(t, "choices") {
		delta := map[string]any{}
		for _, f := range []string{"content", "refusal", "reasoning_content", "reasoning"} {
			switch rapid.IntRange(0, 3).Draw(t, f) {
			case 1:
				delta[f] = nil
			case 2:
				delta[f] = providertest.DrawText(t, f+" text")
			}
		}
		var calls []any
		for range rapid.IntRange(0, 2).Draw(t, "tool calls") {
			call := map[string]any{}
			if rapid.Bool().Draw(t, "index?") {
				call["index"] = rapid.IntRange(0, 2).Draw(t, "index")
			}
			if rapid.Bool().Draw(t, "id?") {
				call["id"] = rapid.SampledFrom([]string{"", "call_0", "call_1"}).Draw(t, "id")
			}
			fn := map[string]any{}
			if rapid.Bool().Draw(t, "name?") {
				fn["name"] = rapid.SampledFrom([]string{"", "f", "g"}).Draw(t, "name")
			}
			if rapid.Bool().Draw(t, "arguments?") {
				fn["arguments"] = rapid.SampledFrom([]string{"", "{", `"a":1`, "}"}).Draw(t, "arguments")
			}
			call["function"] = fn
			calls = append(calls, call)
		}
		if len(calls) > 0 {
			delta["tool_calls"] = calls
		}
		ch := map[string]any{"index": rapid.IntRange(0, 1).Draw(t, "choice index"), "delta": delta}
		ch["finish_reason"] = rapid.SampledFrom([]any{nil, "stop", "tool_calls", "length", "content_filter", "function_call"}).Draw(t, "finish")
		choices = append(choices, ch)
	}
	c["choices"] = choices
	switch rapid.IntRange(0, 2).Draw(t, "usage") {
	case 1:
		c["usage"] = nil
	case 2:
		c["usage"] = map[string]any{"prompt_tokens": rapid.IntRange(0, 1e6).Draw(t, "in"), "completion_tokens": rapid.IntRange(0, 1e6).Draw(t, "out")}
	}
	b, err := json.Marshal(providertest.Perturb(t, c))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAnyStreamReadsAsTheSDKReadsIt: generated streams, framed every way
// SSE allows, give the same chunks or the same error both ways.
func TestAnyStreamReadsAsTheSDKReadsIt(t *testing.T) {
	srv := providertest.NewRecorder(t)
	ours, sdk := both(t, srv)
	rapid.Check(t, func(t *rapid.T) {
		providertest.AssertSameReading(t, srv, ours, sdk, simpleRequest, drawStream(t))
	})
}

// TestRecordedStreamsAccumulateAsTheSDKsAccumulator: the reply the loop
// assembles from our chunks is the message the SDK's own accumulator
// makes of the stream: text, tool calls, usage, finish reason.
func TestRecordedStreamsAccumulateAsTheSDKsAccumulator(t *testing.T) {
	srv := providertest.NewRecorder(t)
	ours, _ := both(t, srv)
	svc := oai.NewChatCompletionService(option.WithBaseURL(srv.URL+"/v1"), option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0), option.WithAPIKey(testKey))
	// (Not empty_tool_delta: the accumulator keeps the {} fragment some
	// servers open the array with as a call; we skip it.)
	for _, name := range []string{"text", "tool_calls", "reasoning"} {
		t.Run(name, func(t *testing.T) {
			srv.Answer(fixture(t, name))
			var acc oai.ChatCompletionAccumulator
			s := svc.NewStreaming(context.Background(), oai.ChatCompletionNewParams{Model: "m"})
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			require.NoError(t, s.Err())
			require.Len(t, acc.Choices, 1)
			msg := acc.Choices[0].Message

			chunks, err := providertest.Run(ours, simpleRequest())
			require.NoError(t, err)
			got := providertest.Assemble(chunks)
			assert.Equal(t, msg.Content+msg.Refusal, got.Text)
			require.Len(t, got.ToolCalls, len(msg.ToolCalls))
			for i, tc := range msg.ToolCalls {
				args := tc.Function.Arguments
				if args == "" {
					args = "{}" // a call without arguments carries an empty object
				}
				assert.Equal(t, session.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args}, got.ToolCalls[i])
			}
			require.NotNil(t, got.Usage)
			assert.Equal(t, session.Usage{Input: int(acc.Usage.PromptTokens), Output: int(acc.Usage.CompletionTokens)}, *got.Usage)
			assert.Equal(t, finishReason(acc.Choices[0].FinishReason, len(msg.ToolCalls) > 0), got.Finish)
		})
	}
}

// TestErrorBodiesReadAsTheSDKReadsThem: an error response gives the
// status and message the SDK's own error gives.
func TestErrorBodiesReadAsTheSDKReadsThem(t *testing.T) {
	tests := []providertest.Reply{
		jsonReply(http.StatusTooManyRequests, rateLimitBody, "Retry-After", "7"),
		jsonReply(400, `{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`),
		jsonReply(401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`, "X-Request-Id", "req_123"),
		jsonReply(404, `{"error":{"message":"The model 'gpt-9' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`),
		jsonReply(500, `{"error":{"message":"The server had an error processing your request.","type":"server_error","param":null,"code":null}}`),
		jsonReply(503, `{"error":{"message":"The engine is currently overloaded.","type":"server_error"}}`, "Retry-After-Ms", "1500"),
	}
	for _, reply := range tests {
		t.Run(http.StatusText(reply.Status), func(t *testing.T) {
			srv := providertest.NewServer(t, reply, reply)
			svc := oai.NewChatCompletionService(option.WithBaseURL(srv.URL+"/v1"), option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0), option.WithAPIKey(testKey))
			s := svc.NewStreaming(context.Background(), oai.ChatCompletionNewParams{Model: "m"})
			var apiErr *oai.Error
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
