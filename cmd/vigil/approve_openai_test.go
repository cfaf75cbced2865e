package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readFileServer is an OpenAI-compatible chat-completions server: to a
// request whose last message is not a tool result it streams a read_file
// call for notes.txt; to one that ends with a tool result it answers
// with that result's content, so the test sees what the model saw.
func readFileServer(t *testing.T) *httptest.Server {
	return chatServer(t, "readFileServer", func(m []chatMessage) []string {
		if last := m[len(m)-1]; last.Role == "tool" {
			seen, _ := json.Marshal(fmt.Sprint(last.Content))
			return []string{
				`{"index":0,"delta":{"role":"assistant","content":"The tool said: "},"finish_reason":null}`,
				`{"index":0,"delta":{"content":` + string(seen) + `},"finish_reason":null}`,
				`{"index":0,"delta":{},"finish_reason":"stop"}`,
			}
		}
		return callChoices("call_r", "read_file", `{"path":"notes.txt"}`)
	})
}

func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestApprovalsEndToEndOverAnOpenAICompatibleServer: a turn asks before
// read_file; vigil run exits 3 and names the call; sessions show lists it;
// vigil approve, a new process, runs the tool and completes the turn;
// vigil deny makes the model see APPROVAL_DENIED; both logs verify; a
// forged log in which the tool ran after a denial fails verify with
// approval-before-run.
func TestApprovalsEndToEndOverAnOpenAICompatibleServer(t *testing.T) {
	srv := readFileServer(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "project"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "project", "notes.txt"), []byte("the launch is on friday"), 0o644))
	cfg := fmt.Sprintf(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/openai
    config: { base_url: "%s/v1", api_key: test-key, model: m }
  - name: agent
    config: { model: m, max_steps: 4 }
  - name: tools/fs
    config: { root: project }
  - name: approvals
    config:
      rules:
        - { tool: read_file, action: ask, reason: "files need a yes" }
  - name: invariants
    config: { mode: strict }
`, srv.URL)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))

	suspend := func() string {
		t.Helper()
		_, stderr, err := vigilIn(t, dir, "", "run", "what do my notes say?")
		require.Equal(t, exitSuspended, exitStatus(err), stderr)
		assert.Contains(t, stderr, `call_r  read_file {"path":"notes.txt"}  (approvals: files need a yes)`)
		id := sessionIDIn(t, stderr)
		stdout, stderr, err := vigilIn(t, dir, "", "sessions", "show", id)
		require.NoError(t, err, stderr)
		assert.Contains(t, stdout, "turn 1 waits for a decision on 1 tool call(s):")
		assert.Contains(t, stdout, `call_r  read_file {"path":"notes.txt"}`)
		return id
	}

	allowed := suspend()
	stdout, stderr, err := vigilIn(t, dir, "", "approve", allowed, "--by", "ana")
	require.NoError(t, err, stderr)
	assert.Equal(t, "The tool said: the launch is on friday\n", stdout)
	_, stderr, err = vigilIn(t, dir, "", "verify", allowed)
	require.NoError(t, err, stderr)

	denied := suspend()
	stdout, stderr, err = vigilIn(t, dir, "", "deny", denied, "--by", "bo", "--reason", "private")
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, "The tool said: error APPROVAL_DENIED: bo denied this call: private")
	_, stderr, err = vigilIn(t, dir, "", "verify", denied)
	require.NoError(t, err, stderr)

	// The forgery: the allowed session's decision turned into a denial,
	// the tool's run left in place. The line stays canonical, so only the
	// rule can tell.
	data, err := os.ReadFile(filepath.Join(dir, "sessions", allowed+".jsonl"))
	require.NoError(t, err)
	forged := strings.Replace(string(data), `"allow":true`, `"allow":false`, 1)
	require.NotEqual(t, string(data), forged)
	path := filepath.Join(dir, "forged.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(forged), 0o644))
	stdout, stderr, err = vigilIn(t, dir, "", "verify", path)
	require.Equal(t, exitFailed, exitStatus(err), stderr)
	assert.Contains(t, stdout, "approval-before-run")
}
