package mcpserve_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/internal/npmtest"
	"github.com/vigil-run/vigil/plugins/store/jsonl"
	"github.com/vigil-run/vigil/server"
)

// inspectorDir holds the MCP Inspector, whose CLI mode these tests run
// against the server, pinned by its package-lock.json; .ci/run installs
// it (npm ci).
const inspectorDir = "testdata/inspector"

// inspect runs the Inspector's CLI mode with args and decodes what it
// prints (one JSON document) into out.
func inspect(t *testing.T, out any, env []string, args ...string) {
	t.Helper()
	bin := npmtest.Tool(t, inspectorDir, ".bin/mcp-inspector")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--cli"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	require.NoError(t, err, "mcp-inspector --cli %s:\n%s", strings.Join(args, " "), stderr.String())
	require.NoError(t, json.Unmarshal(data, out), "%s\n%s", data, stderr.String())
}

// inspected is what the Inspector prints for tools/list and tools/call.
type inspected struct {
	Tools []struct {
		Name        string `json:"name"`
		InputSchema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"inputSchema"`
	} `json:"tools"`
	Meta struct {
		Receipt agentsrv.Receipt `json:"vigil/receipt"`
	} `json:"_meta"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// checkInspected checks a tools/list and a tools/call the Inspector made
// against the log the call's receipt names.
func checkInspected(t *testing.T, rt *vigil.Runtime, list, call inspected) {
	t.Helper()
	require.Len(t, list.Tools, 1)
	assert.Equal(t, "agent", list.Tools[0].Name)
	assert.Contains(t, list.Tools[0].InputSchema.Properties, "task")
	assert.Contains(t, list.Tools[0].InputSchema.Properties, agentsrv.SessionArg)

	require.False(t, call.IsError, "%+v", call)
	require.Len(t, call.Content, 1)
	assert.Equal(t, "Hello there.", call.Content[0].Text)
	r := call.Meta.Receipt
	require.NotEmpty(t, r.Session)
	log, err := rt.Session(context.Background(), r.Session)
	require.NoError(t, err)
	require.Less(t, r.Seq, int64(len(log.Records)))
	assert.Equal(t, lastDigest(t, log.Records[:r.Seq+1]), r.RequestDigest)
}

// The MCP Inspector's CLI spawns the server over stdio (this test binary
// serving the test composition, as vigil mcp does), lists its tools and
// calls one; the answer's receipt names the logged request.
func TestInspectorOverStdio(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	env := []string{childEnv + "=" + dir}
	var list, call inspected
	inspect(t, &list, env, "-e", childEnv+"="+dir, exe, "--method", "tools/list")
	inspect(t, &call, env, "-e", childEnv+"="+dir, exe, "--method", "tools/call", "--tool-name", "agent", "--tool-arg", "task=say hello")
	rt := openRuntime(t, compositionOn(vigil.Plugin("store/jsonl", &jsonl.Config{Dir: dir}), tsScript))
	checkInspected(t, rt, list, call)
}

// The MCP Inspector's CLI calls vigil serve's /mcp over streamable HTTP
// with a bearer token; without it the server refuses.
func TestInspectorOverStreamableHTTP(t *testing.T) {
	toks, err := server.NewTokens("", "ann default user,approver ann-token-0123456789")
	require.NoError(t, err)
	rt := openRuntime(t, composition(tsScript))
	s, err := server.New(rt, server.Options{Auth: toks})
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	auth := "Authorization: Bearer ann-token-0123456789"
	var list, call inspected
	inspect(t, &list, nil, srv.URL+"/mcp", "--transport", "http", "--header", auth, "--method", "tools/list")
	inspect(t, &call, nil, srv.URL+"/mcp", "--transport", "http", "--header", auth, "--method", "tools/call", "--tool-name", "agent", "--tool-arg", "task=say hello")
	checkInspected(t, rt, list, call)

	bin := npmtest.Tool(t, inspectorDir, ".bin/mcp-inspector")
	out, err := exec.Command(bin, "--cli", srv.URL+"/mcp", "--transport", "http", "--method", "tools/list").CombinedOutput()
	require.Error(t, err, "without a token: %s", out)
	assert.NotContains(t, string(out), `"tools"`)
}
