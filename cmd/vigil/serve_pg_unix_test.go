//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// slowModel is a model server speaking OpenAI's streaming chat
// completions: each turn takes steps calc calls, one per model call, and
// then an answer naming the prompt; each reply streams in chunks pause
// apart, so that a worker killed at a random moment is most often in the
// middle of a turn. While hold is set, a request is held before its
// first chunk until release is closed, and announced on held.
type slowModel struct {
	steps int
	pause time.Duration
	calls atomic.Int64

	mu      sync.Mutex
	hold    bool
	held    chan struct{} // receives one value per held request
	release chan struct{}
}

func newSlowModel(t *testing.T, steps int, pause time.Duration) (*slowModel, *httptest.Server) {
	m := &slowModel{steps: steps, pause: pause, held: make(chan struct{}, 16), release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	t.Cleanup(m.let)
	return m, srv
}

// holdNext makes the requests from now on wait for let.
func (m *slowModel) holdNext() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hold = true
}

// let releases the held requests and holds no more.
func (m *slowModel) let() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold {
		m.hold = false
		close(m.release)
	}
}

func (m *slowModel) serve(w http.ResponseWriter, r *http.Request) {
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
	n := m.calls.Add(1)
	// The steps of this turn so far: the tool results after its prompt
	// (a continued turn's interrupted calls count too).
	prompt, done := "", 0
	for _, msg := range req.Messages {
		switch msg.Role {
		case "user":
			_ = json.Unmarshal(msg.Content, &prompt)
			done = 0
		case "tool":
			done++
		}
	}
	m.mu.Lock()
	hold, release := m.hold, m.release
	m.mu.Unlock()
	if hold {
		m.held <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(c string) bool {
		fmt.Fprintf(w, `data: {"id":"c%d","object":"chat.completion.chunk","created":1764450084,"model":"m","choices":[%s]}`+"\n\n", n, c)
		w.(http.Flusher).Flush()
		select {
		case <-time.After(m.pause):
			return true
		case <-r.Context().Done():
			return false
		}
	}
	if done < m.steps {
		if !chunk(fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","content":"Step %d."},"finish_reason":null}`, done+1)) ||
			!chunk(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":"calc","arguments":"{\"expression\":\"%d*7\"}"}}]},"finish_reason":null}`, n, done+1)) {
			return
		}
		chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`)
	} else {
		answer, _ := json.Marshal("Done: " + prompt)
		if !chunk(`{"index":0,"delta":{"role":"assistant","content":"Thinking. "},"finish_reason":null}`) ||
			!chunk(`{"index":0,"delta":{"content":`+string(answer)+`},"finish_reason":null}`) {
			return
		}
		chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// writePGConfig writes a plugins.yaml for serve and workers sharing the
// store/postgres of dsn, schema, with the slow model behind
// provider/openai.
func writePGConfig(t *testing.T, dir, dsn, schema, modelURL string, ttl time.Duration) {
	cfg := fmt.Sprintf(`plugins:
  - { name: store/postgres, config: { dsn: %q, schema: %s, lease_ttl: %s } }
  - { name: provider/openai, config: { base_url: "%s/v1", api_key: k, model: m } }
  - { name: agent, config: { model: m, max_steps: 12 } }
  - { name: tools/calc }
  - { name: invariants, config: { mode: strict } }
`, dsn, schema, ttl, modelURL)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))
}

// proc is a `vigil worker` process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    *logWatch
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// startWorker starts `vigil worker --name name` in dir and waits until
// it runs.
func startWorker(t *testing.T, dir, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, log: newLogWatch(), exited: make(chan struct{})}
	p.cmd = exec.Command(buildVigil(t), append([]string{"worker", "--name", name, "--concurrency", "2"}, args...)...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "NO_COLOR=1")
	p.cmd.Stderr = p.log
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("worker %s's stderr:\n%s", name, p.log)
		}
	})
	require.True(t, p.log.waitFor("vigil worker: running queued turns", time.Minute), "worker %s did not start:\n%s", name, p.log)
	return p
}

// kill kills the worker with SIGKILL and waits until it is gone.
func (p *proc) kill(t *testing.T) {
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.exited
}

// sseClient is a client following a session's events over one SSE
// connection, as a browser's EventSource does.
type sseClient struct {
	id string

	mu      sync.Mutex
	lines   []string
	recs    []session.Record
	err     error
	changed chan struct{}
}

func followSSE(ctx context.Context, t *testing.T, s *served, id string) *sseClient {
	t.Helper()
	f := &sseClient{id: id, changed: make(chan struct{})}
	stream := s.events(ctx, id, "")
	go func() {
		defer stream.resp.Body.Close()
		var sid, data string
		for stream.sc.Scan() {
			line := stream.sc.Text()
			switch {
			case line == "" && data != "":
				rec, err := session.DecodeRecord([]byte(data))
				if err == nil && fmt.Sprint(rec.Seq()) != sid {
					err = fmt.Errorf("event id %s for seq %d", sid, rec.Seq())
				}
				f.mu.Lock()
				if err != nil && f.err == nil {
					f.err = err
				}
				f.lines, f.recs = append(f.lines, data), append(f.recs, rec)
				close(f.changed)
				f.changed = make(chan struct{})
				f.mu.Unlock()
				sid, data = "", ""
			case strings.HasPrefix(line, "id: "):
				sid = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if ctx.Err() == nil && f.err == nil {
			f.err = fmt.Errorf("the event stream of %s ended: %v", id, stream.sc.Err())
		}
		close(f.changed)
		f.changed = nil
	}()
	return f
}

// waitFor waits up to d until cond holds of the records streamed so far.
func (f *sseClient) waitFor(d time.Duration, cond func([]session.Record) bool) bool {
	deadline := time.After(d)
	for {
		f.mu.Lock()
		ok, changed := cond(f.recs), f.changed
		f.mu.Unlock()
		if ok {
			return true
		}
		if changed == nil {
			return false // the stream ended
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// hasUserMessage is a condition: a user/message with prompt was streamed.
func hasUserMessage(prompt string) func([]session.Record) bool {
	return func(recs []session.Record) bool {
		for _, r := range recs {
			if r.Type() == session.TypeUserMessage {
				if m, err := session.DecodeData[session.UserMessage](r); err == nil && m.Content == prompt {
					return true
				}
			}
		}
		return false
	}
}

// summaryOf is GET /v1/sessions/{id}, as far as the fault tests look.
type summaryOf struct {
	Status string
	Events int
	Jobs   []struct{ ID, State, Worker string }
}

// settle waits until session id has no job left and no open turn.
func (s *served) settle(t *testing.T, id string, d time.Duration) summaryOf {
	t.Helper()
	deadline := time.Now().Add(d)
	var sum summaryOf
	for {
		sum = summaryOf{} // the server omits an empty jobs list
		s.call(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
		if sum.Status == "idle" && len(sum.Jobs) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, "idle", sum.Status, "session %s did not settle: %+v", id, sum)
	return sum
}

// faultReport counts what checkSurvived found in a session's log.
type faultReport struct {
	turns, continued, events int
}

// checkSurvived checks session id after faults: every prompt posted has
// its one user/message, in order; each turn that ended interrupted is
// followed by its continuation, and the last turn completed; seqs are
// contiguous; the log verifies; and the client that followed the session
// over one SSE connection got exactly the stored log.
func checkSurvived(t *testing.T, s *served, f *sseClient, prompts []string) faultReport {
	t.Helper()
	id := f.id
	s.settle(t, id, 2*time.Minute)
	resp := s.request(context.Background(), "GET", "/v1/sessions/"+id+"/events", "")
	stored, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", stored)
	lines := strings.Split(strings.TrimSuffix(string(stored), "\n"), "\n")

	var rep faultReport
	rep.events = len(lines)
	var users []string
	var lastEnd *session.TurnEnd
	interrupted := 0 // the turn waiting for its continuation
	for i, l := range lines {
		rec, err := session.DecodeRecord([]byte(l))
		require.NoError(t, err, l)
		require.Equal(t, int64(i), rec.Seq(), "%s: seqs are contiguous", id)
		switch rec.Type() {
		case session.TypeUserMessage:
			m, err := session.DecodeData[session.UserMessage](rec)
			require.NoError(t, err)
			users = append(users, m.Content)
		case session.TypeTurnStart:
			ts, err := session.DecodeData[session.TurnStart](rec)
			require.NoError(t, err)
			rep.turns++
			if interrupted != 0 {
				assert.Equal(t, interrupted, ts.Continues, "%s: turn %d follows interrupted turn %d", id, rec.Turn(), interrupted)
				rep.continued++
			} else {
				assert.Zero(t, ts.Continues, "%s: turn %d continues a turn that was not interrupted", id, rec.Turn())
			}
			interrupted = 0
		case session.TypeTurnEnd:
			te, err := session.DecodeData[session.TurnEnd](rec)
			require.NoError(t, err)
			assert.Contains(t, []string{session.ReasonCompleted, session.ReasonInterrupted}, te.Reason, "%s: turn %d", id, rec.Turn())
			if te.Reason == session.ReasonInterrupted {
				interrupted = rec.Turn()
			}
			lastEnd = &te
		}
	}
	assert.Equal(t, prompts, users, "%s: each prompt posted has its one user/message", id)
	if assert.NotNil(t, lastEnd, "%s: no turn ended", id) {
		assert.Equal(t, session.ReasonCompleted, lastEnd.Reason, "%s: the last turn completed", id)
	}

	var v struct {
		OK         bool
		Violations []any
	}
	s.call(http.StatusOK, "GET", "/v1/sessions/"+id+"/verify", "", &v)
	assert.True(t, v.OK, "%s: %v", id, v.Violations)

	// The sseClient may be a moment behind the store.
	f.waitFor(30*time.Second, func(recs []session.Record) bool { return len(recs) >= len(lines) })
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.NoError(t, f.err)
	assert.Equal(t, lines, f.lines, "%s: the SSE stream is the stored log: nothing lost, nothing twice", id)
	return rep
}

// TestServeWorkersSurviveSIGKILL: `vigil serve --workers 0` and three
// `vigil worker` processes on store/postgres, with a 1s lease TTL; 30
// trials, each posting a turn (a few calc steps, streamed slowly by the
// model) and killing, SIGKILL, a random moment after its first event,
// the worker running it (any worker when the turn is already over), then
// starting a replacement. Every turn completes or is continued, every
// log verifies, and each session's SSE client, following over one
// connection across the kills, got exactly the stored log.
func TestServeWorkersSurviveSIGKILL(t *testing.T) {
	const (
		trials   = 30
		sessions = 4
		workers  = 3
	)
	dsn, schema := pgtestDSN(t)
	start := time.Now()
	_, model := newSlowModel(t, 2, 60*time.Millisecond)
	dir := t.TempDir()
	writePGConfig(t, dir, dsn, schema, model.URL, time.Second)
	s := serve(t, dir, "tok", "--workers", "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	ids := make([]string, sessions)
	follows := make([]*sseClient, sessions)
	prompts := make([][]string, sessions)
	for i := range ids {
		var created struct{ ID string }
		s.call(http.StatusCreated, "POST", "/v1/sessions", "", &created)
		ids[i] = created.ID
		follows[i] = followSSE(ctx, t, s, created.ID)
	}
	running := map[string]*proc{}
	next := 0
	spawn := func() {
		next++
		p := startWorker(t, dir, fmt.Sprintf("w%d", next))
		running[p.name] = p
	}
	for range workers {
		spawn()
	}

	rng := newTrialRand(t)
	midTurn := 0
	for trial := range trials {
		k := trial % sessions
		prompt := fmt.Sprintf("trial %d", trial)
		s.call(http.StatusAccepted, "POST", "/v1/sessions/"+ids[k]+"/turns", fmt.Sprintf(`{"prompt":%q}`, prompt), nil)
		prompts[k] = append(prompts[k], prompt)
		require.True(t, follows[k].waitFor(time.Minute, hasUserMessage(prompt)), "trial %d: the turn did not start", trial)
		time.Sleep(time.Duration(rng.Int64N(int64(400 * time.Millisecond)))) // the random point of the kill
		var sum summaryOf
		s.call(http.StatusOK, "GET", "/v1/sessions/"+ids[k], "", &sum)
		var victim *proc
		for _, j := range sum.Jobs {
			if p := running[j.Worker]; j.State == string(session.JobRunning) && p != nil {
				victim = p
			}
		}
		if victim != nil {
			midTurn++
		} else {
			for _, p := range running {
				victim = p // the turn was over (or between claims): any worker
				break
			}
		}
		victim.kill(t)
		delete(running, victim.name)
		spawn()
	}
	var total faultReport
	for k := range ids {
		rep := checkSurvived(t, s, follows[k], prompts[k])
		total.turns += rep.turns
		total.continued += rep.continued
		total.events += rep.events
	}
	t.Logf("%d trials (%d kills of the worker running the turn), %d sessions: %d turns, %d of them continuations, %d events; %s",
		trials, midTurn, sessions, total.turns, total.continued, total.events, time.Since(start).Round(time.Millisecond))
	assert.Positive(t, total.continued, "some kill landed mid-turn")
}

// pgtestDSN is the shared test server's DSN and a schema of t's own.
func pgtestDSN(t *testing.T) (string, string) {
	return pgtest.DSN(t), pgtest.Schema(t)
}

// newTrialRand returns the trials' randomness, its seed logged so that a
// failing run can be replayed (VIGIL_TRIAL_SEED).
func newTrialRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("VIGIL_TRIAL_SEED"); v != "" {
		_, err := fmt.Sscan(v, &seed)
		require.NoError(t, err, "VIGIL_TRIAL_SEED")
	}
	t.Logf("trial seed %d (VIGIL_TRIAL_SEED replays it)", seed)
	return rand.New(rand.NewPCG(seed, seed))
}

// TestServeStoppedWorkerIsFenced: a worker stopped (SIGSTOP) mid-turn
// for longer than its lease TTL loses the session to another worker,
// which continues the turn to its end; woken (SIGCONT), the first worker
// appends nothing more: its job ends fenced, the log verifies, and the
// client following it got each event once.
func TestServeStoppedWorkerIsFenced(t *testing.T) {
	dsn, schema := pgtestDSN(t)
	model, srv := newSlowModel(t, 2, 30*time.Millisecond)
	dir := t.TempDir()
	writePGConfig(t, dir, dsn, schema, srv.URL, time.Second)
	s := serve(t, dir, "tok", "--workers", "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var created struct{ ID string }
	s.call(http.StatusCreated, "POST", "/v1/sessions", "", &created)
	id := created.ID
	follow := followSSE(ctx, t, s, id)

	w1 := startWorker(t, dir, "w1")
	model.holdNext()
	s.call(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"paused"}`, nil)
	select { // w1 asked the model: it is mid-turn
	case <-model.held:
	case <-time.After(time.Minute):
		t.Fatal("the turn did not reach the model")
	}
	require.NoError(t, w1.cmd.Process.Signal(syscall.SIGSTOP))
	model.let() // the reply waits in w1's socket

	startWorker(t, dir, "w2")
	continued := func(recs []session.Record) bool {
		for _, r := range recs {
			if r.Type() == session.TypeTurnEnd && r.Turn() == 2 {
				return true
			}
		}
		return false
	}
	require.True(t, follow.waitFor(time.Minute, continued), "w2 did not continue the turn")
	before := s.settle(t, id, time.Minute)

	require.NoError(t, w1.cmd.Process.Signal(syscall.SIGCONT))
	assert.True(t, w1.log.waitFor("lost the session's lease mid-job", time.Minute), "w1's job did not end fenced:\n%s", w1.log)
	rep := checkSurvived(t, s, follow, []string{"paused"})
	assert.Equal(t, before.Events, rep.events, "w1 appended nothing once woken")
	assert.Equal(t, faultReport{turns: 2, continued: 1, events: before.Events}, rep)

	// Fenced, w1 is still a worker: it drains and exits cleanly.
	require.NoError(t, w1.cmd.Process.Signal(syscall.SIGTERM))
	<-w1.exited
	assert.NoError(t, w1.err)
}

// TestServeSurvivesAPostgresRestart: `vigil serve --workers 0` and two
// `vigil worker` processes on a PostgreSQL cluster of the test's own,
// restarted (stopped, and started again a moment later) while turns run
// and more are queued. During the outage the API answers with errors;
// once the server is back the API works at once, the workers reconnect
// on their own, every turn completes or is continued, nothing is lost or
// appended twice, every log verifies, and each session's SSE client,
// following over one connection across the restart, got exactly the
// stored log.
func TestServeSurvivesAPostgresRestart(t *testing.T) {
	const sessions, rounds = 3, 4
	cluster := pgtest.NewCluster(t)
	_, srv := newSlowModel(t, 2, 60*time.Millisecond)
	dir := t.TempDir()
	writePGConfig(t, dir, cluster.DSN(), "faults", srv.URL, time.Second)
	s := serve(t, dir, "tok", "--workers", "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids := make([]string, sessions)
	follows := make([]*sseClient, sessions)
	prompts := make([][]string, sessions)
	for i := range ids {
		var created struct{ ID string }
		s.call(http.StatusCreated, "POST", "/v1/sessions", "", &created)
		ids[i] = created.ID
		follows[i] = followSSE(ctx, t, s, created.ID)
	}
	workers := []*proc{startWorker(t, dir, "w1"), startWorker(t, dir, "w2")}
	post := func(round int) {
		for k, id := range ids {
			prompt := fmt.Sprintf("round %d of %d", round, k)
			s.call(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", fmt.Sprintf(`{"prompt":%q}`, prompt), nil)
			prompts[k] = append(prompts[k], prompt)
		}
	}
	for round := range rounds / 2 {
		post(round)
	}
	// Mid-load: the turns of the first round run, the second's are queued.
	for k := range ids {
		require.True(t, follows[k].waitFor(time.Minute, hasUserMessage(prompts[k][0])), "session %d did not start", k)
	}
	// Requests at once, so that the API's pool holds several connections
	// when the server goes.
	getAll := func() []int {
		codes := make([]int, 8)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Go(func() {
				resp := s.request(ctx, "GET", "/v1/sessions/"+ids[i%sessions], "")
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes[i] = resp.StatusCode
			})
		}
		wg.Wait()
		return codes
	}
	require.Equal(t, []int{200, 200, 200, 200, 200, 200, 200, 200}, getAll())
	cluster.Stop()
	for _, path := range []string{"/v1/sessions/" + ids[0], "/v1/sessions/" + ids[0] + "/verify"} {
		resp := s.request(ctx, "GET", path, "")
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.GreaterOrEqual(t, resp.StatusCode, 500, "GET %s while the database is down: %s", path, body)
		var e struct{ Code string }
		assert.NoError(t, json.Unmarshal(body, &e), "%s", body)
		assert.NotEmpty(t, e.Code, "%s", body)
	}
	time.Sleep(500 * time.Millisecond) // the outage
	cluster.Start()
	// Back: the API works at once, and takes the rest of the load.
	assert.Equal(t, []int{200, 200, 200, 200, 200, 200, 200, 200}, getAll(), "the API once the database is back")
	for round := rounds / 2; round < rounds; round++ {
		post(round)
	}
	var total faultReport
	for k := range ids {
		rep := checkSurvived(t, s, follows[k], prompts[k])
		total.turns += rep.turns
		total.continued += rep.continued
		total.events += rep.events
	}
	retried := 0
	for _, w := range workers {
		if strings.Contains(w.log.String(), "claiming a job failed; retrying") {
			retried++
		}
		select {
		case <-w.exited:
			t.Errorf("worker %s exited: %v", w.name, w.err)
		default:
		}
	}
	assert.Positive(t, retried, "the workers lost the database and claimed again")
	t.Logf("%d sessions × %d turns across a restart: %d turns, %d of them continuations, %d events", sessions, rounds, total.turns, total.continued, total.events)
}
