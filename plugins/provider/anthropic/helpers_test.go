package anthropic

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
	"github.com/vigil-run/vigil/session"
)

const testKey = "sk-ant-api03-test0123456789abcdefTESTKEY"

// fixture returns the server-sent events recorded in testdata/name.sse.
func fixture(t *testing.T, name string) []byte {
	return providertest.ReadFile(t, filepath.Join("testdata", name+".sse"))
}

// sse is a 200 reply streaming the named fixture.
func sse(t *testing.T, name string) providertest.Reply {
	return providertest.Reply{Body: fixture(t, name)}
}

// newProvider returns a provider talking to srv with the test key.
func newProvider(t *testing.T, srv *providertest.Server, edit ...func(*Config)) *Provider {
	t.Helper()
	cfg := Config{BaseURL: srv.URL, APIKey: testKey, Model: "claude-sonnet-4-5"}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := New(cfg, WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	return p
}

func ptr[T any](v T) *T { return &v }

// simpleRequest asks one question without tools or a header.
func simpleRequest() *agentloop.Request {
	return &agentloop.Request{
		Session: "01JDTESTSESSION",
		Turn:    1, Step: 1,
		Messages: session.NewMessages([]session.Message{{Role: session.RoleUser, Content: "What is the capital of France?"}}),
	}
}

// fullRequest exercises every part of the mapping: system prompt, tools,
// sampling, a parallel tool round trip and a follow-up question.
func fullRequest() *agentloop.Request {
	return &agentloop.Request{
		Session: "01JDTESTSESSION",
		Turn:    2, Step: 2,
		Header: session.Header{
			Provider: "anthropic",
			Model:    "claude-opus-4-1",
			System:   "You are a careful assistant.",
			Tools: []session.ToolSpec{
				{
					Name:        "get_weather",
					Description: "Current weather for a city.",
					Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}`),
				},
				{Name: "get_time", Description: "Current time in a time zone.", Parameters: json.RawMessage(`{"type": "object", "properties": {"tz": {"type": "string"}}}`)},
				{Name: "ping"},
			},
			Temperature: ptr(0.2),
			MaxTokens:   2048,
			Stop:        []string{"\nUser:"},
		},
		Messages: session.NewMessages([]session.Message{
			{Role: session.RoleUser, Content: "Weather and time in Paris?"},
			{Role: session.RoleAssistant, Content: "I'll check both.", Reasoning: "Two tools, in parallel.", ToolCalls: []session.ToolCall{
				{ID: "toolu_1", Name: "get_weather", Arguments: `{"city": "Paris", "unit": "c"}`},
				{ID: "toolu_2", Name: "get_time", Arguments: `{"tz": "Europe/Paris"}`},
			}},
			{Role: session.RoleTool, ToolCallID: "toolu_1", Name: "get_weather", Content: "14°C, light rain"},
			{Role: session.RoleTool, ToolCallID: "toolu_2", Name: "get_time", Content: "2026-11-29T21:21:24+01:00"},
			{Role: session.RoleAssistant, Content: "It is 14°C with light rain; 21:21 local time."},
			{Role: session.RoleUser, Content: "Thanks!"},
		}),
	}
}
