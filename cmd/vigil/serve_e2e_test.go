package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// gatedModel is a model server speaking a provider's streaming wire
// format (OpenAI chat completions, or Anthropic Messages): to a request
// whose last message is the user's it streams "Let me compute." and then,
// once the test opens its gate, a calc call; to one that ends with a tool
// result it answers with that result, so the test sees what the model saw.
type gatedModel struct {
	wire string
	gate chan struct{}
	once sync.Once
}

func (m *gatedModel) open() { m.once.Do(func() { close(m.gate) }) }

func newGatedModel(t *testing.T, wire string) (*gatedModel, *httptest.Server) {
	m := &gatedModel{wire: wire, gate: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	t.Cleanup(m.open)
	return m, srv
}

func (m *gatedModel) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	last := req.Messages[len(req.Messages)-1]
	toolResult := last.Role == "tool" || bytes.Contains(last.Content, []byte(`"tool_result"`))
	w.Header().Set("Content-Type", "text/event-stream")
	flush := func() { w.(http.Flusher).Flush() }
	if m.wire == "openai" {
		chunk := func(c string) {
			fmt.Fprintf(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1764450084,"model":"m","choices":[%s]}`+"\n\n", c)
			flush()
		}
		if toolResult {
			var content string
			_ = json.Unmarshal(last.Content, &content)
			seen, _ := json.Marshal("The tool said: " + content)
			chunk(`{"index":0,"delta":{"role":"assistant","content":` + string(seen) + `},"finish_reason":null}`)
			chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`)
		} else {
			chunk(`{"index":0,"delta":{"role":"assistant","content":"Let me compute."},"finish_reason":null}`)
			<-m.gate
			chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"calc","arguments":"{\"expression\":\"6*7\"}"}}]},"finish_reason":null}`)
			chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	event := func(typ, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
		flush()
	}
	event("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`)
	if toolResult {
		var blocks []struct {
			Type    string `json:"type"`
			Content any    `json:"content"`
		}
		_ = json.Unmarshal(last.Content, &blocks)
		var result string
		for _, b := range blocks {
			if b.Type == "tool_result" {
				result = fmt.Sprint(b.Content)
				if parts, ok := b.Content.([]any); ok && len(parts) > 0 {
					if p, ok := parts[0].(map[string]any); ok {
						result = fmt.Sprint(p["text"])
					}
				}
			}
		}
		seen, _ := json.Marshal("The tool said: " + result)
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(seen)+`}}`)
		event("content_block_stop", `{"type":"content_block_stop","index":0}`)
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`)
	} else {
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me compute."}}`)
		<-m.gate
		event("content_block_stop", `{"type":"content_block_stop","index":0}`)
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"calc","input":{}}}`)
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"expression\":\"6*7\"}"}}`)
		event("content_block_stop", `{"type":"content_block_stop","index":1}`)
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`)
	}
	event("message_stop", `{"type":"message_stop"}`)
}

// served is a running `vigil serve` process and a client of its API.
type served struct {
	t     *testing.T
	cmd   *exec.Cmd
	base  string
	token string
	// log is the process's stderr.
	log *logWatch
}

// serve starts the real vigil binary's `vigil serve` in dir with args
// and waits until it listens.
func serve(t *testing.T, dir, token string, args ...string) *served {
	t.Helper()
	cmd := exec.Command(buildVigil(t), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	token += "-0123456789abcdef" // a token is 16 characters or more
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "VIGIL_TOKENS=e2e default admin "+token)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	s := &served{t: t, cmd: cmd, token: token, log: newLogWatch()}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	addr := regexp.MustCompile(`the API is at (http://\S+)/v1`)
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		_, _ = s.log.Write([]byte(sc.Text() + "\n"))
		if m := addr.FindStringSubmatch(sc.Text()); m != nil {
			s.base = m[1]
			break
		}
	}
	require.NotEmpty(t, s.base, "vigil serve did not start:\n%s", strings.Join(seen, "\n"))
	go func() { _, _ = io.Copy(s.log, stderr) }()
	return s
}

// stop sends SIGTERM and requires a clean exit.
func (s *served) stop() {
	s.t.Helper()
	require.NoError(s.t, s.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(s.t, s.cmd.Wait())
}

func (s *served) request(ctx context.Context, method, path, body string, header ...string) *http.Response {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+s.token)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	return resp
}

// call sends a request, requires status and decodes the body into out.
func (s *served) call(status int, method, path, body string, out any) {
	s.t.Helper()
	resp := s.request(context.Background(), method, path, body)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	require.Equal(s.t, status, resp.StatusCode, "%s %s: %s", method, path, data)
	if out != nil {
		require.NoError(s.t, json.Unmarshal(data, out), "%s", data)
	}
}

// sse is a server-sent event stream of a session's events.
type sse struct {
	resp *http.Response
	sc   *bufio.Scanner
}

// events opens the session's event stream, resuming after lastID when
// it is not "".
func (s *served) events(ctx context.Context, id, lastID string) *sse {
	s.t.Helper()
	h := []string{"Accept", "text/event-stream"}
	if lastID != "" {
		h = append(h, "Last-Event-ID", lastID)
	}
	resp := s.request(ctx, "GET", "/v1/sessions/"+id+"/events", "", h...)
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	require.Equal(s.t, "text/event-stream", resp.Header.Get("Content-Type"))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	return &sse{resp: resp, sc: sc}
}

// next returns the next event's id and data (a record line).
func (e *sse) next(t *testing.T) (string, string) {
	t.Helper()
	var id, data string
	for e.sc.Scan() {
		line := e.sc.Text()
		switch {
		case line == "" && data != "":
			return id, data
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	t.Fatalf("the event stream ended: %v", e.sc.Err())
	return "", ""
}

// until reads events up to the first of type typ, appending their lines
// to lines, and returns that event's record and id.
func (e *sse) until(t *testing.T, lines *[]string, typ string) (session.Record, string) {
	t.Helper()
	for {
		id, data := e.next(t)
		rec, err := session.DecodeRecord([]byte(data))
		require.NoError(t, err, data)
		require.Equal(t, fmt.Sprint(rec.Seq()), id, "an event's id is its seq")
		*lines = append(*lines, data)
		if rec.Type() == typ {
			return rec, id
		}
	}
}

// TestServeEndToEndWithTheOfficialSDKProviders drives `vigil serve` (the
// real binary, on the JSONL store, its worker in process) through the
// API, with provider/openai and provider/anthropic (the official SDKs)
// against a model server speaking their wire formats: create a session,
// post a turn, stream its events and drop the stream mid-turn while the
// model is still streaming, resume it with Last-Event-ID, decide the
// approval the turn asks for, fork the session, verify both. The events
// streamed, in two connections, are exactly the stored log: none lost,
// none twice.
func TestServeEndToEndWithTheOfficialSDKProviders(t *testing.T) {
	for _, wire := range []string{"openai", "anthropic"} {
		t.Run(wire, func(t *testing.T) {
			model, srv := newGatedModel(t, wire)
			dir := t.TempDir()
			provider := fmt.Sprintf(`{ name: provider/openai, config: { base_url: "%s/v1", api_key: k, model: m } }`, srv.URL)
			if wire == "anthropic" {
				provider = fmt.Sprintf(`{ name: provider/anthropic, config: { base_url: "%s", api_key: k, model: m } }`, srv.URL)
			}
			cfg := `plugins:
  - { name: store/jsonl, config: { dir: sessions } }
  - ` + provider + `
  - { name: agent, config: { model: m, max_steps: 4 } }
  - { name: tools/calc }
  - { name: approvals, config: { rules: [ { tool: calc, action: ask, reason: "arithmetic needs a yes" } ] } }
  - { name: invariants, config: { mode: strict } }
`
			require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))
			s := serve(t, dir, "tok-"+wire)

			var created struct{ ID string }
			s.call(http.StatusCreated, "POST", "/v1/sessions", "", &created)
			id := created.ID
			var queued struct {
				Job      string
				Position int
			}
			s.call(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"what is 6*7?"}`, &queued)
			assert.NotEmpty(t, queued.Job)
			assert.Equal(t, 0, queued.Position)

			// The first connection: up to the model's first chunk. The
			// model holds the rest of its reply until the gate opens.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			first, cut := context.WithCancel(ctx)
			var lines []string
			stream := s.events(first, id, "")
			_, lastID := stream.until(t, &lines, session.TypeAssistantChunk)
			cut()
			stream.resp.Body.Close()

			// Resumed, mid-turn: the rest, and the approval it asks for.
			stream = s.events(ctx, id, lastID)
			defer stream.resp.Body.Close()
			model.open()
			ask, _ := stream.until(t, &lines, session.TypeApprovalRequest)
			req, err := session.DecodeData[session.ApprovalRequest](ask)
			require.NoError(t, err)

			var sum struct {
				Status  string
				Pending []struct{ Call, Tool string }
			}
			for range 100 { // the worker ends its job once the turn suspended
				s.call(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
				if sum.Status == "suspended" {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			require.Equal(t, "suspended", sum.Status)
			require.Len(t, sum.Pending, 1)
			assert.Equal(t, req.ID, sum.Pending[0].Call)
			assert.Equal(t, "calc", sum.Pending[0].Tool)

			s.call(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/approvals/"+req.ID, `{"allow":true}`, nil)
			end, _ := stream.until(t, &lines, session.TypeTurnEnd)
			te, err := session.DecodeData[session.TurnEnd](end)
			require.NoError(t, err)
			assert.Equal(t, session.ReasonCompleted, te.Reason)

			// Streamed across two connections: exactly the stored log.
			resp := s.request(ctx, "GET", "/v1/sessions/"+id+"/events", "")
			stored, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, string(stored), strings.Join(lines, "\n")+"\n")
			var answer string
			for _, l := range lines {
				rec, err := session.DecodeRecord([]byte(l))
				require.NoError(t, err)
				if rec.Type() == session.TypeAssistantMessage {
					m, err := session.DecodeData[session.AssistantMessage](rec)
					require.NoError(t, err)
					answer = m.Content
				}
			}
			assert.Equal(t, "The tool said: 42", answer)

			var fork struct {
				ID     string
				Parent struct {
					ID  string
					Seq int64
				}
				Events int
			}
			s.call(http.StatusCreated, "POST", "/v1/sessions", fmt.Sprintf(`{"fork":{"session":%q,"at":%d}}`, id, end.Seq()), &fork)
			assert.Equal(t, id, fork.Parent.ID)
			assert.Equal(t, end.Seq(), fork.Parent.Seq)
			for _, sid := range []string{id, fork.ID} {
				var rep struct {
					OK         bool
					Events     int
					Violations []any
				}
				s.call(http.StatusOK, "GET", "/v1/sessions/"+sid+"/verify", "", &rep)
				assert.True(t, rep.OK, "%s: %v", sid, rep.Violations)
				assert.Positive(t, rep.Events)
			}
			s.stop()
		})
	}
}
