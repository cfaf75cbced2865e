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
	"github.com/vigil-run/vigil/plugins/provider/anthropic"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// messagesSSE renders Anthropic Messages stream events as a server-sent
// event body: each event is "type:json".
func messagesSSE(events ...string) providertest.Reply {
	var b strings.Builder
	for _, e := range events {
		typ, data, _ := strings.Cut(e, ":")
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, data)
	}
	return providertest.Reply{Body: []byte(b.String())}
}

const anthropicStart = `message_start:{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":42,"output_tokens":1}}}`

// TestTurnOverAnthropicProvider runs a whole turn, with a tool call whose
// arguments stream in fragments, against a server speaking the Messages
// streaming format; the invariants plugin checks every request.
func TestTurnOverAnthropicProvider(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hi"), 0o644))

	srv := providertest.NewServer(t,
		messagesSSE(anthropicStart,
			`content_block_start:{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`content_block_delta:{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Looking."}}`,
			`content_block_stop:{"type":"content_block_stop","index":0}`,
			`content_block_start:{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"list_dir","input":{}}}`,
			`content_block_delta:{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}`,
			`content_block_delta:{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\": \".\"}"}}`,
			`content_block_stop:{"type":"content_block_stop","index":1}`,
			`message_delta:{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}}`,
			`message_stop:{"type":"message_stop"}`,
		),
		messagesSSE(anthropicStart,
			`content_block_start:{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`content_block_delta:{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Just "}}`,
			`content_block_delta:{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"notes.txt."}}`,
			`content_block_stop:{"type":"content_block_stop","index":0}`,
			`message_delta:{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`,
			`message_stop:{"type":"message_stop"}`,
		),
	)

	root := bus.New()
	defer root.Dispose()
	c := root.Context()
	apply(t, c, "invariants", nil)
	apply(t, c, "store/memory", nil)
	apply(t, c, "provider/anthropic", func(cfg any) {
		ac := cfg.(*anthropic.Config)
		ac.BaseURL, ac.APIKey, ac.Model = srv.URL+"/", "sk-ant-test", "claude-sonnet-4-5"
	})
	apply(t, c, "tools/fs", func(cfg any) { cfg.(*fstools.Config).Root = dir })
	apply(t, c, "agent", func(cfg any) { cfg.(*agentloop.Config).System = "You are terse." })

	mgr, err := live.Sessions.Get(c)
	require.NoError(t, err)
	a, err := agentloop.AgentService.Get(c)
	require.NoError(t, err)
	sess, err := mgr.Create(context.Background())
	require.NoError(t, err)
	res, err := a.Run(context.Background(), sess, "what is here?")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, "Just notes.txt.", res.Content)
	assert.Equal(t, 2, res.Steps)

	// The second request carried the tool result back as a tool_result
	// block, and the system prompt as the system parameter.
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	var body struct {
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
				Content   any    `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(reqs[1].Body, &body))
	assert.Equal(t, "claude-sonnet-4-5", body.Model)
	assert.Contains(t, string(body.System), "You are terse.")
	require.Len(t, body.Messages, 3) // user, assistant (text + tool_use), user (tool_result)
	last := body.Messages[2]
	assert.Equal(t, "user", last.Role)
	require.NotEmpty(t, last.Content)
	assert.Equal(t, "tool_result", last.Content[0].Type)
	assert.Equal(t, "toolu_1", last.Content[0].ToolUseID)
	assert.Contains(t, fmt.Sprint(last.Content[0].Content), "notes.txt")

	var header session.RequestHeader
	for _, r := range sess.Records() {
		if r.Type() == session.TypeRequestHeader {
			header, err = session.DecodeData[session.RequestHeader](r)
			require.NoError(t, err)
		}
	}
	assert.Equal(t, "anthropic", header.Header.Provider)
	for _, r := range sess.Records() {
		assert.NotContains(t, r.String(), "sk-ant-test", "the key never reaches the log")
	}
}
