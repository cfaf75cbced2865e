package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/compaction"
	"github.com/vigil-run/vigil/plugins/provider/replay"
)

// systemEchoServer is an OpenAI-compatible server whose answer names the
// system prompt it was sent: a reply shows which composition asked.
func systemEchoServer(t *testing.T) *httptest.Server {
	return chatServer(t, "systemEchoServer", func(m []chatMessage) []string {
		system := ""
		for _, msg := range m {
			if msg.Role == "system" {
				system = fmt.Sprint(msg.Content)
			}
		}
		return textChoices("asked as: " + system)
	})
}

// TestReplayAgainstLiveWritesAFork: a session recorded with one system
// prompt, replayed --live against a composition with another: the
// divergence (header.system at turn 1 step 1) goes to the composition's
// real provider, and the result is a fork of the original in the -c
// store, which verifies; the original's log is not touched.
func TestReplayAgainstLiveWritesAFork(t *testing.T) {
	srv := systemEchoServer(t)
	dir := t.TempDir()
	composition := func(system string) string {
		return fmt.Sprintf(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/openai
    config: { base_url: "%s/v1", api_key: test-key, model: m }
  - name: agent
    config: { model: m, system: %q }
  - name: invariants
`, srv.URL, system)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(composition("be brief")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.yaml"), []byte(composition("be thorough")), 0o644))

	stdout, stderr, err := vigilIn(t, dir, "", "run", "hello")
	require.NoError(t, err, stderr)
	require.Equal(t, "asked as: be brief\n", stdout)
	orig := sessionIDIn(t, stderr)
	before, err := os.ReadFile(filepath.Join(dir, "sessions", orig+".jsonl"))
	require.NoError(t, err)

	stdout, stderr, err = vigilIn(t, dir, "", "replay", "--against", "new.yaml", "--live", "--json", orig)
	require.Equal(t, exitFailed, exitStatus(err), stderr)
	var reps []againstReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &reps), stdout)
	require.Len(t, reps, 1)
	rep := reps[0]
	require.NotNil(t, rep.Divergence)
	assert.Equal(t, "header.system", rep.Divergence.Field)
	assert.Equal(t, [2]int{1, 1}, [2]int{rep.Divergence.Turn, rep.Divergence.Step})
	assert.Equal(t, "be brief", rep.Divergence.Expected)
	assert.Equal(t, "be thorough", rep.Divergence.Actual)
	require.NotEmpty(t, rep.Fork)

	after, err := os.ReadFile(filepath.Join(dir, "sessions", orig+".jsonl"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the original is not touched")
	fork, err := os.ReadFile(filepath.Join(dir, "sessions", rep.Fork+".jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(fork), `"parent":{"id":"`+orig)
	assert.Contains(t, string(fork), `asked as: be thorough`, "the composition's provider answered")
	assert.NotContains(t, string(fork), `asked as: be brief`)
	_, stderr, err = vigilIn(t, dir, "", "verify", rep.Fork)
	assert.NoError(t, err, stderr)
}

// TestReplayKnowsTheSummaryPrefix: replay serves a recorded compaction
// summary without compaction's prefix, which it may not import.
func TestReplayKnowsTheSummaryPrefix(t *testing.T) {
	assert.Equal(t, compaction.SummaryPrefix, replay.SummaryPrefix)
}
