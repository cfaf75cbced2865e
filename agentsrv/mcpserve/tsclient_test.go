package mcpserve_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/agentsrv/mcpserve"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/store/jsonl"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// tsclientDir holds the MCP TypeScript SDK and the client script these
// tests run, pinned by its package-lock.json; .ci/run installs it (npm ci).
const tsclientDir = "testdata/tsclient"

// childEnv names the sessions folder of this test binary run as an MCP
// server over stdio, the command the TypeScript client spawns.
const childEnv = "VIGIL_MCPSERVE_TEST_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(serveStdio(dir))
	}
	os.Exit(m.Run())
}

// tsScript is what the client script's calls get from the model, in
// order: a greeting; a calc call the policy asks about, then its answer;
// another greeting in the first session; a call of the blocking tool.
var tsScript = []scripted.Reply{{Text: "Hello there."}, askCalc, {Text: "42."}, {Text: "Hello again."}, waitCall}

// serveStdio serves the test composition over stdin and stdout, on the
// JSONL store in dir, as vigil mcp does.
func serveStdio(dir string) int {
	ctx := context.Background()
	rt, err := vigil.Open(ctx, compositionOn(vigil.Plugin("store/jsonl", &jsonl.Config{Dir: dir}), tsScript))
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	defer rt.Close()
	srv, err := mcpserve.New(rt, mcpserve.Options{Access: mcpserve.Local{Name: "ts-stdio"}})
	if err == nil {
		err = srv.Run(ctx, &mcp.StdioTransport{})
	}
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	return 0
}

// tsOutput is what the client script prints.
type tsOutput struct {
	Tools []struct {
		Name       string   `json:"name"`
		Properties []string `json:"properties"`
	} `json:"tools"`
	Hello struct {
		Text     string           `json:"text"`
		IsError  bool             `json:"isError"`
		Progress []string         `json:"progress"`
		Receipt  agentsrv.Receipt `json:"receipt"`
	} `json:"hello"`
	Approval struct {
		Text    string           `json:"text"`
		IsError bool             `json:"isError"`
		Asked   []string         `json:"asked"`
		Receipt agentsrv.Receipt `json:"receipt"`
	} `json:"approval"`
	Again struct {
		Text    string           `json:"text"`
		Receipt agentsrv.Receipt `json:"receipt"`
	} `json:"again"`
	Cancelled string `json:"cancelled"`
}

// runClient runs the client script with args and returns what it printed.
func runClient(t *testing.T, env []string, args ...string) tsOutput {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node is missing in CI: %v", err)
		}
		t.Skipf("node is not installed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tsclientDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the MCP TypeScript SDK is missing in CI: .ci/run must run npm ci in agentsrv/mcpserve/%s (%v)", tsclientDir, err)
		}
		t.Skipf("the MCP TypeScript SDK is not installed: run `npm ci` in agentsrv/mcpserve/%s (in CI this fails)", tsclientDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"client.mjs"}, args...)...)
	cmd.Dir = tsclientDir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node client.mjs %s:\n%s", strings.Join(args, " "), stderr.String())
	var got tsOutput
	require.NoError(t, json.Unmarshal(out, &got), "%s\n%s", out, stderr.String())
	return got
}

// checkClient checks what the client got against the logs of rt's
// store: the tool list, the greeting's progress and receipt, the
// approval asked and logged as by's decision, the continued session and
// the cancelled turn ended aborted.
func checkClient(t *testing.T, rt *vigil.Runtime, got tsOutput, by string) {
	t.Helper()
	ctx := context.Background()
	require.Len(t, got.Tools, 1)
	assert.Equal(t, "agent", got.Tools[0].Name)
	assert.Equal(t, []string{"session", "task"}, got.Tools[0].Properties)

	assert.Equal(t, "Hello there.", got.Hello.Text)
	assert.False(t, got.Hello.IsError)
	// The chunks came as progress. The SDK hands a notification to its
	// handler a tick later than the answer, and drops the handler with
	// the answer, so the last chunks may be lost when they arrive with it.
	assert.NotEmpty(t, got.Hello.Progress)
	assert.True(t, strings.HasPrefix("Hello there.", strings.Join(got.Hello.Progress, "")), "%q", got.Hello.Progress)
	hello, err := rt.Session(ctx, got.Hello.Receipt.Session)
	require.NoError(t, err)
	assert.Equal(t, lastDigest(t, hello.Records[:got.Hello.Receipt.Seq+1]), got.Hello.Receipt.RequestDigest)

	assert.Equal(t, "42.", got.Approval.Text)
	require.Len(t, got.Approval.Asked, 1, "the approval was asked by elicitation")
	assert.Contains(t, got.Approval.Asked[0], "calc")
	approval, err := rt.Session(ctx, got.Approval.Receipt.Session)
	require.NoError(t, err)
	assert.Equal(t, []string{by}, decidedBy(t, approval.Records))
	assert.Equal(t, session.TypeTurnEnd, approval.Records[got.Approval.Receipt.Seq].Type())

	assert.Equal(t, "Hello again.", got.Again.Text)
	assert.Equal(t, got.Hello.Receipt.Session, got.Again.Receipt.Session)
	assert.Equal(t, 2, got.Again.Receipt.Turn)

	assert.Contains(t, got.Cancelled, "the test cancels")
	// The cancelled turn ends once the server heard of it.
	var ends []string
	require.Eventually(t, func() bool {
		ends = turnEnds(t, rt)
		return len(ends) == 4
	}, 20*time.Second, 20*time.Millisecond, "the turn ends: %v", ends)
	assert.ElementsMatch(t, []string{"completed", "completed", "completed", session.ReasonAborted}, ends)
}

// turnEnds are the end reasons of every turn of rt's sessions.
func turnEnds(t *testing.T, rt *vigil.Runtime) []string {
	t.Helper()
	ctx := context.Background()
	list, err := rt.Sessions(ctx)
	require.NoError(t, err)
	var ends []string
	for _, info := range list {
		log, err := rt.Session(ctx, info.ID)
		require.NoError(t, err)
		for _, rec := range log.Records {
			if rec.Type() == session.TypeTurnEnd {
				end, err := session.DecodeData[session.TurnEnd](rec)
				require.NoError(t, err)
				ends = append(ends, end.Reason)
			}
		}
	}
	return ends
}

// The MCP TypeScript SDK's client spawns the server over stdio (this
// test binary serving the test composition, as vigil mcp does).
func TestTypeScriptClientOverStdio(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	got := runClient(t, []string{childEnv + "=" + dir}, "stdio", exe)
	rt := openRuntime(t, compositionOn(vigil.Plugin("store/jsonl", &jsonl.Config{Dir: dir}), tsScript))
	checkClient(t, rt, got, "ts-stdio")
}

// The MCP TypeScript SDK's client calls vigil serve's /mcp over
// streamable HTTP, with a bearer token.
func TestTypeScriptClientOverStreamableHTTP(t *testing.T) {
	toks, err := server.NewTokens("", "ann default user,approver ann-token-0123456789")
	require.NoError(t, err)
	rt := openRuntime(t, composition(tsScript))
	s, err := server.New(rt, server.Options{Auth: toks})
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	got := runClient(t, []string{"VIGIL_MCP_TOKEN=ann-token-0123456789"}, "http", srv.URL+"/mcp")
	checkClient(t, rt, got, "ann")
}
