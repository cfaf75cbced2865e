//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// The durability trials: `vigil serve` runs a turn whose every step calls
// the effect tool (an external plugin that appends the call's tag to a
// file), while a client follows the session over SSE; the test kills the
// process (the plugin sends SIGKILL to its host right after the k-th
// effect, k random), and on PostgreSQL crashes the database too (pg_ctl stop -m
// immediate, then start). Then the stored log (`vigil sessions export`,
// which repairs nothing) must show a tool/start for every effect that
// happened, and what the client received must be the log's first
// records, byte for byte.

// effectTool is testdata/effecttool, built once.
var effectTool = &binary{name: "effecttool", pkg: "./testdata/effecttool"}

// effectModel speaks OpenAI's streaming chat completions: each reply of a
// turn's first steps calls the effect tool once, with a tag unique to the
// reply; then it answers.
func effectModel(t *testing.T, steps int) *httptest.Server { return effectModelOf(t, steps, "effect") }

// effectModelOf is effectModel calling each of tools in every reply, the
// tag of each call its tool's first letter and the reply's number. The
// steps are counted by the assistant messages of the conversation (the
// trials' sessions have one prompt; a continuation carries it on).
func effectModelOf(t *testing.T, steps int, tools ...string) *httptest.Server {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		asked := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				asked++
			}
		}
		n := calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(c string) {
			fmt.Fprintf(w, `data: {"id":"c%d","object":"chat.completion.chunk","created":1764450084,"model":"m","choices":[%s]}`+"\n\n", n, c)
			w.(http.Flusher).Flush()
		}
		if asked < steps {
			chunk(`{"index":0,"delta":{"role":"assistant","content":"Acting."},"finish_reason":null}`)
			for i, tool := range tools {
				chunk(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"call_%c%d","type":"function","function":{"name":%q,"arguments":"{\"tag\":\"%c%d\"}"}}]},"finish_reason":null}`, i, tool[0], n, tool, tool[0], n))
			}
			chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`)
		} else {
			chunk(`{"index":0,"delta":{"role":"assistant","content":"Done."},"finish_reason":null}`)
			chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// durableTrial is one trial's set-up: the store's plugins.yaml line and,
// on PostgreSQL, the database crash after the kill.
type durableTrial struct {
	store string
	crash func()
	// follow: a client follows the session over SSE. (On JSONL, the
	// follower's reads write what the store buffered, which a kill of
	// the process then does not lose: half the trials run without one.)
	follow bool
}

// runDurableTrial runs one trial in a fresh folder and reports, as
// errors, what the log lost.
func runDurableTrial(t *testing.T, tr durableTrial, modelURL string) {
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects")
	k := 1 + rand.IntN(3)
	cfg := fmt.Sprintf(`plugins:
  - %s
  - { name: provider/openai, config: { base_url: "%s/v1", api_key: k, model: m } }
  - { name: agent, config: { model: m, max_steps: 8 } }
  - { id: effects, name: external, config: { path: %q, config: { file: %q, kill_after: %d } } }
`, tr.store, modelURL, effectTool.build(t), effects, k)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))
	s := serve(t, dir, "tok")
	var created struct{ ID string }
	s.call(http.StatusCreated, "POST", "/v1/sessions", "", &created)
	id := created.ID

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lines []string
	streamed := make(chan struct{})
	if !tr.follow {
		close(streamed)
	} else {
		go follow(s.events(ctx, id, ""), &lines, streamed)
	}
	// The kill may come before the answer: the turn was accepted then.
	req, err := http.NewRequestWithContext(ctx, "POST", s.base+"/v1/sessions/"+id+"/turns", strings.NewReader(`{"prompt":"act"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
	}

	// The plugin kills the process right after the k-th effect.
	exited := make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
		t.Fatalf("not killed after effect %d:\n%s", k, s.log)
	}
	if tr.crash != nil {
		tr.crash()
	}
	<-streamed
	happened, err := os.ReadFile(effects)
	require.NoError(t, err)

	export := exec.Command(buildVigil(t), "sessions", "export", id)
	export.Dir = dir
	stored, err := export.Output()
	require.NoError(t, err)
	logLines := strings.Split(strings.TrimSuffix(string(stored), "\n"), "\n")[1:] // the header is not an event
	started := map[string]bool{}
	tags := map[string]string{} // tag → call id
	for _, l := range logLines {
		rec, err := session.DecodeRecord([]byte(l))
		require.NoError(t, err, l)
		switch rec.Type() {
		case session.TypeToolStart:
			st, err := session.DecodeData[session.ToolStart](rec)
			require.NoError(t, err)
			started[st.ID] = true
		case session.TypeToolCall:
			c, err := session.DecodeData[session.ToolCall](rec)
			require.NoError(t, err)
			var a struct{ Tag string }
			require.NoError(t, json.Unmarshal([]byte(c.Arguments), &a))
			tags[a.Tag] = c.ID
		}
	}
	for tag := range strings.FieldsSeq(string(happened)) {
		assert.True(t, started[tags[tag]], "the effect %s happened, but the log has no tool/start for it", tag)
	}
	if tr.follow && assert.LessOrEqual(t, len(lines), len(logLines), "the stream has records the log lost") {
		assert.Equal(t, strings.Join(logLines[:len(lines)], "\n"), strings.Join(lines, "\n"), "the stream is the log's beginning")
	}
}

// TestAToolThatRanIsInTheLogAfterAKill: 30 kills right after an effect on
// the JSONL store.
func TestAToolThatRanIsInTheLogAfterAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process per trial")
	}
	srv := effectModel(t, 3)
	for i := range 30 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			runDurableTrial(t, durableTrial{store: "{ name: store/jsonl, config: { dir: sessions } }", follow: i%2 == 0}, srv.URL)
		})
	}
}

// TestAToolThatRanIsInTheLogAfterAKillAndADatabaseCrash: 30 kills right after
// an effect on PostgreSQL, each followed by an immediate shutdown of the
// database.
func TestAToolThatRanIsInTheLogAfterAKillAndADatabaseCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process per trial")
	}
	cluster := pgtest.NewCluster(t)
	srv := effectModel(t, 3)
	for i := range 30 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			store := fmt.Sprintf("{ name: store/postgres, config: { dsn: %q, schema: trial%d } }", cluster.DSN(), i)
			runDurableTrial(t, durableTrial{store: store, crash: cluster.Crash, follow: true}, srv.URL)
		})
	}
}

// follow reads the events of stream into lines until it ends, then
// closes done.
func follow(stream *sse, lines *[]string, done chan<- struct{}) {
	defer close(done)
	defer stream.resp.Body.Close()
	var data string
	for stream.sc.Scan() {
		switch l := stream.sc.Text(); {
		case l == "" && data != "":
			*lines = append(*lines, data)
			data = ""
		case strings.HasPrefix(l, "data: "):
			data = strings.TrimPrefix(l, "data: ")
		}
	}
}
