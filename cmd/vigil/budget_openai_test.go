package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// usageServer is an OpenAI-compatible chat-completions server that answers
// every request with a short text and its usage, and keeps the model each
// request named.
type usageServer struct {
	*httptest.Server
	mu     sync.Mutex
	models []string
}

func newUsageServer(t *testing.T) *usageServer {
	s := &usageServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err != nil || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("usageServer: %s %s: %s: %v", r.Method, r.URL.Path, body, err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.models = append(s.models, req.Model)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range textChoices("Noted.") {
			fmt.Fprintf(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764450084,"model":%q,"choices":[%s]}`+"\n\n", req.Model, c)
		}
		fmt.Fprintf(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764450084,"model":%q,"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":1100}}`+"\n\n", req.Model)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *usageServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.models...)
}

// TestReadmeBudgetExampleWithTheModelOnTheProvider: the README's budget
// example, with the model set on provider/openai only (as the README's
// MCP example does) and none on the agent, prices every turn rather than
// refusing it (`model "" has no price`): the header logs the model the
// provider is asked for. A compaction's one-shot is logged with that
// model and its usage, which sessions show counts; the log verifies.
func TestReadmeBudgetExampleWithTheModelOnTheProvider(t *testing.T) {
	srv := newUsageServer(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/openai
    config: { base_url: "%s/v1", api_key: test-key, model: gpt-4o-mini }
  - name: agent
  - name: compaction
    config: { max_messages: 2, keep: 1 }
  - name: invariants
  - name: budget
    config:
      session: { tokens: 200000, cost: 2.50 }          # the whole log
      turn: { tokens: 50000, cost: 0.50, wall_clock: 5m }
      max_repeats: 3      # the same tool with byte-identical arguments (default 3, -1: off)
      prices:             # USD per million tokens, by the header's model name
        gpt-4o-mini: { input: 0.15, output: 0.60 }
`, srv.URL)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))

	_, stderr, err := vigilIn(t, dir, "", "run", "Remember: the launch is on friday.")
	require.NoError(t, err, stderr)
	id := sessionIDIn(t, stderr)
	for _, p := range []string{"And the venue?", "Who comes?"} {
		_, stderr, err := vigilIn(t, dir, "", "run", "-s", id, p)
		require.NoError(t, err, stderr)
	}

	models := srv.seen()
	require.Len(t, models, 4, "three steps and a compaction")
	for _, got := range models {
		assert.Equal(t, "gpt-4o-mini", got)
	}
	stdout, stderr, err := vigilIn(t, dir, "", "sessions", "show", id)
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, "request header (initial): openai/gpt-4o-mini")
	assert.Contains(t, stdout, "one-shot compaction sent: ")
	assert.Contains(t, stdout, ", openai/gpt-4o-mini")
	// 4 calls of 1000 in, 100 out: $0.00015 + $0.00006 each.
	assert.Contains(t, stdout, "usage: 3 turns, tokens in 4000, out 400; $0.00084 (one-shots: tokens in 1000, out 100; $0.00021)")

	stdout, stderr, err = vigilIn(t, dir, "", "sessions", "list", "--json")
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, `"oneshot_usage": {`)

	_, stderr, err = vigilIn(t, dir, "", "verify", id)
	require.NoError(t, err, stderr)
	assert.Contains(t, stderr, "ok (")
	assert.NotContains(t, stderr, "note:")
}
