package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	a2atool "github.com/vigil-run/vigil/plugins/tools/a2a"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// An agent calls a Vigil agent served over A2A as a tool (tools/a2a,
// configured by its card's URL): the call is logged like any tool call,
// its result names the remote task, its context and the remote answer
// with its receipt, and the remote server knows the task.
func TestA2AToolCallsARemoteVigilAgent(t *testing.T) {
	toks, err := server.NewTokens("", "ann default user,approver ann-token-0123456789")
	require.NoError(t, err)
	remote := newAPI(t, composition(false, scripted.Reply{Text: "Remote answer."}), server.Options{Auth: toks})
	remote.startWorker()
	ctx := context.Background()

	ask := func(args string) scripted.Reply {
		return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "a2a_agent", Arguments: json.RawMessage(args)}}}
	}
	rt, err := vigil.Open(ctx, vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{ask(`{"task":"hi"}`), {Text: "Asked."}}}),
		vigil.Plugin(a2atool.Name, a2atool.Config{Agents: []a2atool.Agent{{
			Card:    remote.srv.URL + "/a2a/agent/.well-known/agent-card.json",
			Headers: map[string]string{"Authorization": "Bearer ann-token-0123456789"},
		}}}),
		vigil.Plugin("agent", agentloop.Config{}),
	))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "Ask the other agent."})
	require.NoError(t, err)
	assert.Equal(t, "Asked.", res.Content)

	log, err := rt.Session(ctx, res.Session)
	require.NoError(t, err)
	var results []session.ToolResult
	for _, rec := range log.Records {
		if rec.Type() == session.TypeToolResult {
			r, err := session.DecodeData[session.ToolResult](rec)
			require.NoError(t, err)
			results = append(results, r)
		}
	}
	require.Len(t, results, 1)
	require.Nil(t, results[0].Error)
	var out a2atool.Result
	require.NoError(t, json.Unmarshal([]byte(results[0].Content), &out))
	assert.Equal(t, string(a2a.TaskStateCompleted), out.State)
	assert.Equal(t, "Remote answer.", out.Answer)
	require.NotEmpty(t, out.Task)
	require.NotNil(t, out.Receipt, "a Vigil agent's receipt comes with the answer")

	c := a2aClient(t, remote, "ann-token-0123456789")
	task, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: a2a.TaskID(out.Task)})
	require.NoError(t, err)
	assert.Equal(t, out.Context, task.ContextID)
	assert.Equal(t, a2a.TaskStateCompleted, task.Status.State)
}
