package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// call0Server is an OpenAI-compatible chat-completions server of the kind
// that numbers tool calls from call_0 in every response: to a request
// whose last message is not a tool result it streams a calc call with id
// call_0, to one that ends with a tool result it streams a text answer.
// It keeps every request body.
type call0Server struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

type chatRequest struct {
	Messages []struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

func newCall0Server(t *testing.T) *call0Server {
	s := &call0Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req chatRequest
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err != nil || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("call0Server: %s %s: %v", r.Method, r.URL.Path, err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		s.mu.Unlock()
		chunks := []string{
			`{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"calc","arguments":""}}]},"finish_reason":null}`,
			`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"expression\":"}}]},"finish_reason":null}`,
			`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"1+2\"}"}}]},"finish_reason":null}`,
			`{"index":0,"delta":{},"finish_reason":"tool_calls"}`,
		}
		if m := req.Messages; len(m) > 0 && m[len(m)-1].Role == "tool" {
			chunks = []string{
				`{"index":0,"delta":{"role":"assistant","content":"It is "},"finish_reason":null}`,
				`{"index":0,"delta":{"content":"3."},"finish_reason":null}`,
				`{"index":0,"delta":{},"finish_reason":"stop"}`,
			}
		}
		streamChoices(w, chunks)
	}))
	t.Cleanup(s.Close)
	return s
}

// streamChoices writes an OpenAI chat-completions stream whose chunks
// carry the given choices (JSON), then [DONE].
func streamChoices(w http.ResponseWriter, choices []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range choices {
		fmt.Fprintf(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764450084,"model":"m","choices":[%s]}`+"\n\n", c)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (s *call0Server) last() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[len(s.bodies)-1]
}

// vigilIn runs the vigil command (the test binary, put on PATH by
// testscript.Main) in dir with stdin, and returns its stdout, its stderr
// and its exit error.
// sessionIDRe finds the session id vigil run prints on stderr.
var sessionIDRe = regexp.MustCompile(`session ([0-9A-Z]{26})`)

// sessionIDIn returns the session id a vigil run printed in stderr.
func sessionIDIn(t *testing.T, stderr string) string {
	t.Helper()
	m := sessionIDRe.FindStringSubmatch(stderr)
	require.NotNil(t, m, "no session id in %q", stderr)
	return m[1]
}

func vigilIn(t *testing.T, dir, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command("vigil", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "VIGIL_SHOW_EXIT=")
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestCall0ProviderRunsTenTurnsAcrossThreeProcesses: a session driven by
// a provider that answers call_0 in every response runs ten turns across
// three vigil processes, each turn a tool call and an answer under the
// strict invariants, and `vigil verify` and `vigil replay` accept the log. Every call is
// logged with its own id, and the server gets them all back.
func TestCall0ProviderRunsTenTurnsAcrossThreeProcesses(t *testing.T) {
	srv := newCall0Server(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/openai
    config: { base_url: "%s/v1", api_key: test-key, model: m }
  - name: agent
    config: { model: m, max_steps: 4 }
  - name: tools/calc
  - name: invariants
    config: { mode: strict }
`, srv.URL)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))

	// Process 1: one turn on a new session.
	_, stderr, err := vigilIn(t, dir, "", "run", "what is 1+2?")
	require.NoError(t, err, stderr)
	id := sessionIDIn(t, stderr)
	// Processes 2 and 3: chats resuming it, five and four turns.
	for _, n := range []int{5, 4} {
		stdin := strings.Repeat("and what is 1+2?\n", n) + "/exit\n"
		_, stderr, err := vigilIn(t, dir, stdin, "chat", "--no-watch", "-s", id)
		require.NoError(t, err, stderr)
	}

	_, stderr, err = vigilIn(t, dir, "", "verify", id)
	require.NoError(t, err, "vigil verify: %s", stderr)
	// A replay re-serves the logged chunks, ids included, and every
	// request re-derives.
	stdout, stderr, err := vigilIn(t, dir, "", "replay", id)
	require.NoError(t, err, "vigil replay: %s", stderr)
	assert.Contains(t, stdout, "20 of 20 requests re-derived identically")

	data, err := os.ReadFile(filepath.Join(dir, "sessions", id+".jsonl"))
	require.NoError(t, err)
	log, err := session.DecodeBytes(data)
	require.NoError(t, err)
	var reasons, calls []string
	for _, r := range log.Records {
		switch r.Type() {
		case session.TypeTurnEnd:
			d, err := session.DecodeData[session.TurnEnd](r)
			require.NoError(t, err)
			reasons = append(reasons, d.Reason)
		case session.TypeToolCall:
			d, err := session.DecodeData[session.ToolCall](r)
			require.NoError(t, err)
			calls = append(calls, d.ID)
		}
	}
	assert.Equal(t, slices.Repeat([]string{session.ReasonCompleted}, 10), reasons)
	want := []string{"call_0"}
	for turn := 2; turn <= 10; turn++ {
		want = append(want, fmt.Sprintf("call_0_%d_1_0", turn))
	}
	assert.Equal(t, want, calls)

	// The last request carried every call and its result back, by the
	// logged ids.
	var req chatRequest
	require.NoError(t, json.Unmarshal(srv.last(), &req))
	var asked, answered []string
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			asked = append(asked, c.ID)
		}
		if m.Role == "tool" {
			answered = append(answered, m.ToolCallID)
		}
	}
	assert.Equal(t, want, asked)
	assert.Equal(t, want, answered)
}
