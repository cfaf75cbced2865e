package plugins_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
	"github.com/vigil-run/vigil/plugins/provider/openai"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// sse renders OpenAI chat completion chunks as a server-sent event body.
func sse(chunks ...string) providertest.Reply {
	var b strings.Builder
	for _, c := range chunks {
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764450084,"model":"gpt-4o-mini","choices":[%s]}`+"\n\n", c)
	}
	b.WriteString("data: [DONE]\n\n")
	return providertest.Reply{Body: []byte(b.String())}
}

func TestTurnOverOpenAIProvider(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plan.md"), []byte("# plan"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "src"), 0o755))

	srv := providertest.NewServer(t,
		sse(
			`{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"list_dir","arguments":""}}]},"finish_reason":null}`,
			`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]},"finish_reason":null}`,
			`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \".\"}"}}]},"finish_reason":null}`,
			`{"index":0,"delta":{},"finish_reason":"tool_calls"}`,
		),
		sse(
			`{"index":0,"delta":{"role":"assistant","content":"There is "},"finish_reason":null}`,
			`{"index":0,"delta":{"content":"plan.md and src/."},"finish_reason":null}`,
			`{"index":0,"delta":{},"finish_reason":"stop"}`,
		),
	)

	root := bus.New()
	defer root.Dispose()
	c := root.Context()
	apply(t, c, "invariants", nil)
	apply(t, c, "store/memory", nil)
	apply(t, c, "provider/openai", func(cfg any) {
		oc := cfg.(*openai.Config)
		oc.BaseURL, oc.Model = srv.URL+"/v1", "gpt-4o-mini"
	})
	apply(t, c, "tools/fs", func(cfg any) { cfg.(*fstools.Config).Root = dir })
	apply(t, c, "agent", func(cfg any) { cfg.(*agentloop.Config).System = "You are terse." })

	mgr, err := live.Sessions.Get(c)
	require.NoError(t, err)
	a, err := agentloop.AgentService.Get(c)
	require.NoError(t, err)
	sess, err := mgr.Create(context.Background())
	require.NoError(t, err)
	var streamed strings.Builder
	res, err := a.Run(context.Background(), sess, "what is here?", agentloop.OnChunk(func(ch agentloop.Chunk) { streamed.WriteString(ch.Text) }))
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, "There is plan.md and src/.", res.Content)
	assert.Equal(t, res.Content, streamed.String())

	// The second request carried the real tool result back to the server.
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(reqs[1].Body, &body))
	assert.Equal(t, "gpt-4o-mini", body.Model)
	require.Len(t, body.Messages, 4) // system, user, assistant (call), tool
	assert.Equal(t, "system", body.Messages[0].Role)
	assert.Equal(t, "tool", body.Messages[3].Role)
	assert.Equal(t, "call_A", body.Messages[3].ToolCallID)
	assert.Contains(t, fmt.Sprint(body.Messages[3].Content), "plan.md\nsrc/")
	require.Len(t, body.Tools, 2)

	// The log cites the provider's chunks and pairs the call.
	recs := sess.Records()
	calls := 0
	for _, r := range recs {
		if r.Type() == session.TypeToolCall {
			tc, err := session.DecodeData[session.ToolCall](r)
			require.NoError(t, err)
			assert.Equal(t, session.ToolCall{ID: "call_A", Name: "list_dir", Arguments: `{"path": "."}`}, tc)
			calls++
		}
	}
	assert.Equal(t, 1, calls)
}
