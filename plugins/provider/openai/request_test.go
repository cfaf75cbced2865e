package openai

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
	"github.com/vigil-run/vigil/session"
)

// TestRequestBodyMatchesGolden asserts the exact JSON the server received.
func TestRequestBodyMatchesGolden(t *testing.T) {
	tests := []struct {
		name string
		req  *agentloop.Request
	}{
		{"simple", simpleRequest()},
		{"full", fullRequest()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.NewServer(t, sse(t, "text"))
			s, err := newProvider(t, srv).Stream(context.Background(), tt.req)
			require.NoError(t, err)
			_, err = providertest.Collect(s)
			require.NoError(t, err)

			reqs := srv.Requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, "POST", reqs[0].Method)
			assert.Equal(t, "/v1/chat/completions", reqs[0].Path)
			assert.Equal(t, "Bearer "+testKey, reqs[0].Header.Get("Authorization"))
			providertest.Golden(t, filepath.Join("testdata", "golden", tt.name+".json"), reqs[0].Body)
		})
	}
}

func TestRequestUsesConfigModelWhenHeaderHasNone(t *testing.T) {
	srv := providertest.NewServer(t, sse(t, "text"), sse(t, "text"))
	p := newProvider(t, srv, func(c *Config) { c.Model = "deepseek-chat" })
	for _, req := range []*agentloop.Request{simpleRequest(), fullRequest()} {
		s, err := p.Stream(context.Background(), req)
		require.NoError(t, err)
		_, err = providertest.Collect(s)
		require.NoError(t, err)
	}
	var bodies [2]struct {
		Model string `json:"model"`
	}
	for i, r := range srv.Requests() {
		require.NoError(t, json.Unmarshal(r.Body, &bodies[i]))
	}
	assert.Equal(t, "deepseek-chat", bodies[0].Model)
	assert.Equal(t, "gpt-4o-2024-11-20", bodies[1].Model, "the header's model wins")
}

func TestRequestWithoutKeyIgnoresEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/never")
	t.Setenv("OPENAI_ORG_ID", "org-from-the-environment")
	srv := providertest.NewServer(t, sse(t, "text"))
	s, err := newProvider(t, srv, func(c *Config) { c.APIKey = "" }).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	_, err = providertest.Collect(s)
	require.NoError(t, err)

	h := srv.Requests()[0].Header
	assert.Empty(t, h.Get("Authorization"))
	assert.Empty(t, h.Get("OpenAI-Organization"))
}

func TestMessageMapping(t *testing.T) {
	tests := []struct {
		name   string
		system string
		msgs   []session.Message
		want   string
	}{
		{
			name: "no system prompt",
			msgs: []session.Message{{Role: "user", Content: "hi"}},
			want: `[{"content":"hi","role":"user"}]`,
		},
		{
			name:   "system prompt leads",
			system: "Be brief.",
			msgs:   []session.Message{{Role: "user", Content: "hi"}},
			want:   `[{"content":"Be brief.","role":"system"},{"content":"hi","role":"user"}]`,
		},
		{
			name: "user name is kept",
			msgs: []session.Message{{Role: "user", Content: "hi", Name: "ada"}},
			want: `[{"content":"hi","name":"ada","role":"user"}]`,
		},
		{
			name: "assistant text",
			msgs: []session.Message{{Role: "assistant", Content: "Hello."}},
			want: `[{"content":"Hello.","role":"assistant"}]`,
		},
		{
			name: "reasoning goes back as reasoning_content",
			msgs: []session.Message{{Role: "assistant", Reasoning: "list first", ToolCalls: []session.ToolCall{{ID: "c", Name: "list_dir", Arguments: "{}"}}}},
			want: `[{"reasoning_content":"list first","tool_calls":[{"id":"c","function":{"arguments":"{}","name":"list_dir"},"type":"function"}],"role":"assistant"}]`,
		},
		{
			name: "assistant tool calls without content",
			msgs: []session.Message{{Role: "assistant", ToolCalls: []session.ToolCall{
				{ID: "call_1", Name: "list_dir", Arguments: `{"path":"."}`},
				{ID: "call_2", Name: "read_file", Arguments: `{"path":"go.mod"}`},
			}}},
			want: `[{"tool_calls":[{"id":"call_1","function":{"arguments":"{\"path\":\".\"}","name":"list_dir"},"type":"function"},{"id":"call_2","function":{"arguments":"{\"path\":\"go.mod\"}","name":"read_file"},"type":"function"}],"role":"assistant"}]`,
		},
		{
			name: "assistant text and a tool call",
			msgs: []session.Message{{Role: "assistant", Content: "Looking.", ToolCalls: []session.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}}},
			want: `[{"content":"Looking.","tool_calls":[{"id":"c","function":{"arguments":"{}","name":"f"},"type":"function"}],"role":"assistant"}]`,
		},
		{
			name: "arguments that are not JSON pass through verbatim",
			msgs: []session.Message{{Role: "assistant", ToolCalls: []session.ToolCall{{ID: "c", Name: "f", Arguments: `{"path":`}}}},
			want: `[{"tool_calls":[{"id":"c","function":{"arguments":"{\"path\":","name":"f"},"type":"function"}],"role":"assistant"}]`,
		},
		{
			name: "empty assistant message still has content",
			msgs: []session.Message{{Role: "assistant"}},
			want: `[{"content":"","role":"assistant"}]`,
		},
		{
			name: "tool result answers its call",
			msgs: []session.Message{{Role: "tool", ToolCallID: "call_1", Name: "list_dir", Content: "go.mod\nmain.go"}},
			want: `[{"content":"go.mod\nmain.go","tool_call_id":"call_1","role":"tool"}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := messages(tt.system, session.NewMessages(tt.msgs))
			require.NoError(t, err)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(b))
		})
	}
}

func TestMessageMappingRejectsUnknownRole(t *testing.T) {
	_, err := messages("", session.NewMessages([]session.Message{{Role: "user", Content: "a"}, {Role: "developer", Content: "b"}}))
	assert.ErrorContains(t, err, `message 1: unknown role "developer"`)
}

func TestToolParametersAreSentVerbatim(t *testing.T) {
	schema := `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}},"required":["z"]}`
	tool, err := functionTool(session.ToolSpec{Name: "f", Description: "d", Parameters: json.RawMessage(schema)})
	require.NoError(t, err)
	b, err := json.Marshal(tool)
	require.NoError(t, err)
	// Key order survives, so the request is the one the tool declared.
	assert.Contains(t, string(b), `"parameters":`+schema)

	_, err = functionTool(session.ToolSpec{Name: "bad", Parameters: json.RawMessage(`{"type":`)})
	assert.ErrorContains(t, err, `tool "bad": parameters are not valid JSON`)
}

func TestInvalidToolSchemaFailsBeforeSending(t *testing.T) {
	srv := providertest.NewServer(t)
	req := simpleRequest()
	req.Header.Tools = []session.ToolSpec{{Name: "bad", Parameters: json.RawMessage(`{`)}}
	_, err := newProvider(t, srv).Stream(context.Background(), req)
	var pe *agentloop.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.False(t, pe.Retryable)
	assert.Empty(t, srv.Requests())
}
