package a2aserve_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/internal/npmtest"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/store/jsonl"
	_ "github.com/vigil-run/vigil/plugins/tools/calc" // tools/calc, by name
	"github.com/vigil-run/vigil/server"
)

// jsclientDir holds the A2A JavaScript SDK and the client script this
// test runs, pinned by its package-lock.json; .ci/run installs it (npm ci).
const jsclientDir = "testdata/jsclient"

var askCalc = scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "6*7"}}}}

// The A2A JavaScript SDK's client, from npm, against `vigil serve`'s
// /a2a with a worker: it sends a task and gets the answer with its
// receipt, streams one (chunks as appends, the answer, a final status),
// answers an input-required task with "allow" and cancels another.
func TestA2AJavaScriptClient(t *testing.T) {
	npmtest.Tool(t, jsclientDir, "@a2a-js/sdk/package.json")
	ctx := context.Background()
	rt, err := vigil.Open(ctx, vigil.Compose(
		vigil.Plugin("store/jsonl", &jsonl.Config{Dir: t.TempDir()}),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "Hello there."}, {Text: "One, two."}, askCalc, {Text: "42."}, askCalc}}),
		vigil.Plugin("tools/calc", nil),
		vigil.Plugin("approvals", approvals.Config{Rules: []approvals.Rule{{Tool: "calc", Action: "ask"}}}),
		vigil.Plugin("agent", agentloop.Config{}),
	))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	toks, err := server.NewTokens("", "js default user,approver js-token-0123456789")
	require.NoError(t, err)
	s, err := server.New(rt, server.Options{Auth: toks})
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	wctx, stop := context.WithCancel(ctx)
	worked := make(chan struct{})
	go func() {
		defer close(worked)
		_ = rt.Work(wctx, vigil.WorkOptions{Worker: "js"})
	}()
	t.Cleanup(func() { stop(); <-worked })

	nctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(nctx, "node", "client.mjs", srv.URL, "js-token-0123456789")
	cmd.Dir = jsclientDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	require.NoError(t, err, "node client.mjs:\n%s", stderr.String())
	steps := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		steps[m["step"].(string)] = m
	}

	send := steps["send"]
	assert.Equal(t, "completed", send["state"])
	assert.Equal(t, "Hello there.", send["answer"])
	receipt, _ := send["receipt"].(map[string]any)
	require.NotNil(t, receipt, "the answer carries its receipt")
	assert.Equal(t, send["context"], receipt["session"])
	assert.Regexp(t, "^[0-9a-f]{64}$", receipt["request_digest"])

	stream := steps["stream"]
	assert.Equal(t, "completed", stream["state"])
	assert.Equal(t, "One, two.", stream["chunks"])
	assert.Equal(t, "One, two.", stream["answer"])
	assert.Equal(t, "task", stream["kinds"].([]any)[0])
	assert.NotNil(t, stream["receipt"])

	assert.Equal(t, "input-required", steps["input-required"]["state"])
	assert.Contains(t, steps["input-required"]["status"], "calc")
	assert.Equal(t, "completed", steps["allowed"]["state"])
	assert.Equal(t, "42.", steps["allowed"]["answer"])
	assert.Equal(t, "canceled", steps["cancelled"]["state"])

}
