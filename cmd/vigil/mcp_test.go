package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentsrv"
)

// vigil mcp serves the agent over stdio to an MCP client; the receipt of
// its answer, on signed sessions, verifies with vigil verify --key and
// the receipt's checkpoint as the anchor; a checkpoint of another
// session's does not.
func TestMCPReceiptVerifies(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `plugins:
  - name: store/jsonl
    config: { dir: %q }
  - name: provider/scripted
    config:
      script:
        - text: "Hello from the agent."
      repeat: true
  - name: agent
    config: { model: scripted }
  - name: invariants
`, filepath.Join(dir, "sessions")), 0o644))
	keyFile := filepath.Join(dir, "key")
	code, vkey, stderr := runVigil(t, "keys", "generate", "mcp-test", "--out", keyFile)
	require.Equal(t, 0, code, stderr)
	vkey = strings.TrimSpace(vkey)
	t.Setenv("VIGIL_SIGNING_KEY_FILE", keyFile)

	receipts := serveMCP(t, cfg, 2)
	require.Len(t, receipts, 2)
	for _, r := range receipts {
		require.NotEmpty(t, r.Checkpoint, "signed sessions: the receipt carries the turn's checkpoint")
		assert.Regexp(t, "^[0-9a-f]{64}$", r.RequestDigest)
	}
	anchor := filepath.Join(dir, "anchor")
	require.NoError(t, os.WriteFile(anchor, []byte(receipts[0].Checkpoint), 0o644))
	code, out, stderr := runVigil(t, "verify", "-c", cfg, "--key", vkey, "--anchor", anchor, receipts[0].Session)
	assert.Equal(t, 0, code, "%s\n%s", out, stderr)

	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte(receipts[1].Checkpoint), 0o644))
	code, out, stderr = runVigil(t, "verify", "-c", cfg, "--key", vkey, "--anchor", other, receipts[0].Session)
	assert.NotEqual(t, 0, code, "another session's checkpoint anchors nothing here:\n%s\n%s", out, stderr)
}

// serveMCP runs vigil mcp -c cfg in process, calls its agent n times
// (each a new session) with the Go SDK's client over the process's stdin
// and stdout, and returns the answers' receipts once the server exited
// on the end of its input.
func serveMCP(t *testing.T, cfg string, n int) []agentsrv.Receipt {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		code := run(context.Background(), &env{stdin: inR, stdout: outW, stderr: &errb, getenv: os.Getenv}, []string{"mcp", "-c", cfg, "--as", "ide"})
		_ = outW.Close()
		exited <- code
	}()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	var out []agentsrv.Receipt
	for range n {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.Tools[0].Name, Arguments: map[string]any{"task": "Say hello."}})
		require.NoError(t, err)
		require.False(t, res.IsError)
		assert.Equal(t, "Hello from the agent.", res.Content[0].(*mcp.TextContent).Text)
		raw, err := json.Marshal(res.Meta[agentsrv.MetaKey])
		require.NoError(t, err)
		var r agentsrv.Receipt
		require.NoError(t, json.Unmarshal(raw, &r))
		out = append(out, r)
	}
	require.NoError(t, cs.Close())
	require.Equal(t, 0, <-exited, errb.String())
	return out
}
