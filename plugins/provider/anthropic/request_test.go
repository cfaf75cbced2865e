package anthropic

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
			assert.Equal(t, "/v1/messages", reqs[0].Path)
			assert.NotEmpty(t, reqs[0].Header.Get("Anthropic-Version"))
			providertest.Golden(t, filepath.Join("testdata", "golden", tt.name+".json"), reqs[0].Body)
		})
	}
}

func TestRequestModelAndMaxTokensFallBack(t *testing.T) {
	tests := []struct {
		name      string
		cfg       func(*Config)
		header    session.Header
		model     string
		maxTokens int
	}{
		{"defaults", nil, session.Header{}, "claude-sonnet-4-5", DefaultMaxTokens},
		{"config max_tokens", func(c *Config) { c.MaxTokens = 4096 }, session.Header{}, "claude-sonnet-4-5", 4096},
		{"header wins", func(c *Config) { c.MaxTokens = 4096 }, session.Header{Model: "claude-haiku-4-5", MaxTokens: 300}, "claude-haiku-4-5", 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.NewServer(t, sse(t, "text"))
			var edits []func(*Config)
			if tt.cfg != nil {
				edits = append(edits, tt.cfg)
			}
			req := simpleRequest()
			req.Header = tt.header
			s, err := newProvider(t, srv, edits...).Stream(context.Background(), req)
			require.NoError(t, err)
			_, err = providertest.Collect(s)
			require.NoError(t, err)

			var body struct {
				Model     string `json:"model"`
				MaxTokens int    `json:"max_tokens"`
			}
			require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
			assert.Equal(t, tt.model, body.Model)
			assert.Equal(t, tt.maxTokens, body.MaxTokens)
		})
	}
}

func TestRequestWithoutKeyIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-the-environment")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/never")
	srv := providertest.NewServer(t, sse(t, "text"))
	s, err := newProvider(t, srv, func(c *Config) { c.APIKey = "" }).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	_, err = providertest.Collect(s)
	require.NoError(t, err)

	h := srv.Requests()[0].Header
	assert.Empty(t, h.Get("Authorization"))
	assert.Empty(t, h.Get("X-Api-Key"))
}

func TestMessageMapping(t *testing.T) {
	calls := []session.ToolCall{
		{ID: "toolu_1", Name: "list_dir", Arguments: `{"path":"."}`},
		{ID: "toolu_2", Name: "read_file", Arguments: `{"path":"go.mod"}`},
	}
	tests := []struct {
		name string
		msgs []session.Message
		want string
	}{
		{
			name: "user text",
			msgs: []session.Message{{Role: "user", Content: "hi"}},
			want: `[{"content":[{"text":"hi","type":"text"}],"role":"user"}]`,
		},
		{
			name: "assistant text, reasoning dropped",
			msgs: []session.Message{{Role: "assistant", Content: "Hello.", Reasoning: "greet back"}},
			want: `[{"content":[{"text":"Hello.","type":"text"}],"role":"assistant"}]`,
		},
		{
			name: "assistant tool calls without text",
			msgs: []session.Message{{Role: "assistant", ToolCalls: calls}},
			want: `[{"content":[{"id":"toolu_1","input":{"path":"."},"name":"list_dir","type":"tool_use"},{"id":"toolu_2","input":{"path":"go.mod"},"name":"read_file","type":"tool_use"}],"role":"assistant"}]`,
		},
		{
			name: "consecutive tool results share one user turn",
			msgs: []session.Message{
				{Role: "assistant", ToolCalls: calls},
				{Role: "tool", ToolCallID: "toolu_1", Name: "list_dir", Content: "go.mod"},
				{Role: "tool", ToolCallID: "toolu_2", Name: "read_file", Content: "module x"},
			},
			want: `[
				{"content":[{"id":"toolu_1","input":{"path":"."},"name":"list_dir","type":"tool_use"},{"id":"toolu_2","input":{"path":"go.mod"},"name":"read_file","type":"tool_use"}],"role":"assistant"},
				{"content":[
					{"tool_use_id":"toolu_1","content":[{"text":"go.mod","type":"text"}],"type":"tool_result"},
					{"tool_use_id":"toolu_2","content":[{"text":"module x","type":"text"}],"type":"tool_result"}
				],"role":"user"}]`,
		},
		{
			name: "a user message after tool results joins their turn",
			msgs: []session.Message{
				{Role: "tool", ToolCallID: "toolu_1", Content: "go.mod"},
				{Role: "user", Content: "and now?"},
			},
			want: `[{"content":[{"tool_use_id":"toolu_1","content":[{"text":"go.mod","type":"text"}],"type":"tool_result"},{"text":"and now?","type":"text"}],"role":"user"}]`,
		},
		{
			// A tool/reconcile folds to a user message after the call's
			// unknown result; the next turn's prompt follows it: one
			// user turn, the tool_result block first, as the API needs.
			name: "a reconcile and the next prompt join the unknown result's turn",
			msgs: []session.Message{
				{Role: "assistant", ToolCalls: calls[:1]},
				{Role: "tool", ToolCallID: "toolu_1", Name: "list_dir", Content: "error TOOL_OUTCOME_UNKNOWN"},
				{Role: "user", Content: session.ReconcileMessage(session.ToolReconcile{ID: "toolu_1", Name: "list_dir", Content: "go.mod", By: "ana"})},
				{Role: "user", Content: "and now?"},
			},
			want: `[
				{"content":[{"id":"toolu_1","input":{"path":"."},"name":"list_dir","type":"tool_use"}],"role":"assistant"},
				{"content":[
					{"tool_use_id":"toolu_1","content":[{"text":"error TOOL_OUTCOME_UNKNOWN","type":"text"}],"type":"tool_result"},
					{"text":"The outcome of tool call toolu_1 (list_dir), which was unknown, was reconciled by ana. The call succeeded; its result:\ngo.mod","type":"text"},
					{"text":"and now?","type":"text"}
				],"role":"user"}]`,
		},
		{
			name: "empty tool result has no content",
			msgs: []session.Message{{Role: "tool", ToolCallID: "toolu_1"}},
			want: `[{"content":[{"tool_use_id":"toolu_1","type":"tool_result"}],"role":"user"}]`,
		},
		{
			name: "arguments that are not an object become {}",
			msgs: []session.Message{{Role: "assistant", ToolCalls: []session.ToolCall{
				{ID: "a", Name: "f", Arguments: `{"path":`},
				{ID: "b", Name: "f", Arguments: ``},
				{ID: "c", Name: "f", Arguments: `[1]`},
			}}},
			want: `[{"content":[{"id":"a","input":{},"name":"f","type":"tool_use"},{"id":"b","input":{},"name":"f","type":"tool_use"},{"id":"c","input":{},"name":"f","type":"tool_use"}],"role":"assistant"}]`,
		},
		{
			name: "an empty assistant message is left out",
			msgs: []session.Message{{Role: "user", Content: "a"}, {Role: "assistant"}, {Role: "user", Content: "b"}},
			want: `[{"content":[{"text":"a","type":"text"},{"text":"b","type":"text"}],"role":"user"}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := messages(session.NewMessages(tt.msgs))
			require.NoError(t, err)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(b))
		})
	}
}

func TestMessageMappingRejectsUnknownRole(t *testing.T) {
	_, err := messages(session.NewMessages([]session.Message{{Role: "user", Content: "a"}, {Role: "system", Content: "b"}}))
	assert.ErrorContains(t, err, `message 1: unknown role "system"`)
}

func TestToolSchemaIsSentVerbatim(t *testing.T) {
	schema := `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}},"required":["z"]}`
	tool, err := toolParam(session.ToolSpec{Name: "f", Description: "d", Parameters: json.RawMessage(schema)})
	require.NoError(t, err)
	b, err := json.Marshal(tool)
	require.NoError(t, err)
	assert.Equal(t, `{"name":"f","description":"d","input_schema":`+schema+`}`, string(b))

	tool, err = toolParam(session.ToolSpec{Name: "ping"})
	require.NoError(t, err)
	b, err = json.Marshal(tool)
	require.NoError(t, err)
	assert.Equal(t, `{"name":"ping","input_schema":{"type":"object","properties":{}}}`, string(b), "the API requires a schema")

	_, err = toolParam(session.ToolSpec{Name: "bad", Parameters: json.RawMessage(`{"type":`)})
	assert.ErrorContains(t, err, `tool "bad": parameters are not valid JSON`)
}
