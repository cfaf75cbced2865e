//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// The trials of tool effects across crashes: each step of a turn
// calls an idempotent tool (keyed_effect: one effect per idempotency key)
// and one that is not (effect: an effect per run), and the `vigil run`
// process is SIGKILLed at a random moment: right before an effect (after
// its tool/start), right after one (before its tool/result), or at a
// random time while the tools run. Then `vigil run -s ID --continue`
// carries the turn on (re-running the idempotent call the kill left
// unknown, with its key), and every call of the other tool whose outcome
// is unknown is reconciled with what really happened: through `vigil
// reconcile` in half the trials, through the API in the others. Then:
// an idempotent call's effect happened exactly once, a non-idempotent
// one's at most once, every effect has its tool/start in the log, no
// outcome is left unknown, and the log verifies and replays.

// TestToolEffectsAcrossRandomKills runs the 30 trials.
func TestToolEffectsAcrossRandomKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes per trial")
	}
	srv := effectModelOf(t, 3, "keyed_effect", "effect")
	for i := range 30 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { runEffectsTrial(t, srv.URL, i) })
	}
}

// effectsTrial is one trial's folder and its commands.
type effectsTrial struct {
	t       *testing.T
	dir     string
	effects string
	model   string
}

func (tr *effectsTrial) configure(kill string) {
	cfg := fmt.Sprintf(`plugins:
  - { name: store/jsonl, config: { dir: sessions } }
  - { name: provider/openai, config: { base_url: "%s/v1", api_key: k, model: m } }
  - { name: agent, config: { model: m, max_steps: 8 } }
  - { id: effects, name: external, config: { path: %q, config: { file: %q, delay_ms: 5%s } } }
`, tr.model, effectTool.build(tr.t), tr.effects, kill)
	require.NoError(tr.t, os.WriteFile(filepath.Join(tr.dir, "plugins.yaml"), []byte(cfg), 0o644))
}

func (tr *effectsTrial) vigil(args ...string) (string, error) {
	cmd := exec.Command(buildVigil(tr.t), args...)
	cmd.Dir = tr.dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// killedRun runs `vigil run` and kills it: the plugin does, right before
// or right after the k-th effect (mode 0, 1), or the test does, a random
// time after the first effect began (mode 2).
func (tr *effectsTrial) killedRun(mode int) {
	k := 1 + rand.IntN(6)
	switch mode {
	case 0:
		tr.configure(fmt.Sprintf(", kill_before: %d", k))
	case 1:
		tr.configure(fmt.Sprintf(", kill_after: %d", k))
	default:
		tr.configure("")
	}
	cmd := exec.Command(buildVigil(tr.t), "run", "act")
	cmd.Dir = tr.dir
	require.NoError(tr.t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if mode == 2 {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(tr.effects + ".runs"); err == nil {
				break
			}
			if _, err := os.Stat(tr.effects); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(60_000)) * time.Microsecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		tr.t.Fatalf("vigil run was not killed (mode %d, k %d)", mode, k)
	}
}

// call is what the log says of one tool call.
type effectCall struct {
	id, name, tag string
	started       bool
	unknown       bool // its result is TOOL_OUTCOME_UNKNOWN
	reconciled    *session.ToolReconcile
}

// calls reads the session's log (`vigil sessions export`, which repairs
// nothing) into its calls, by id.
func (tr *effectsTrial) calls(id string) map[string]*effectCall {
	out, err := tr.vigil("sessions", "export", id)
	require.NoError(tr.t, err, out)
	calls := map[string]*effectCall{}
	for l := range strings.Lines(out) {
		rec, err := session.DecodeRecord([]byte(strings.TrimSuffix(l, "\n")))
		if err != nil {
			continue // the header
		}
		switch rec.Type() {
		case session.TypeToolCall:
			c, err := session.DecodeData[session.ToolCall](rec)
			require.NoError(tr.t, err)
			var a struct{ Tag string }
			require.NoError(tr.t, json.Unmarshal([]byte(c.Arguments), &a))
			calls[c.ID] = &effectCall{id: c.ID, name: c.Name, tag: a.Tag}
		case session.TypeToolStart:
			st, err := session.DecodeData[session.ToolStart](rec)
			require.NoError(tr.t, err)
			calls[st.ID].started = true
		case session.TypeToolResult:
			res, err := session.DecodeData[session.ToolResult](rec)
			require.NoError(tr.t, err)
			if c := calls[res.ID]; c != nil && res.Error != nil && res.Error.Code == session.CodeToolOutcomeUnknown {
				c.unknown = true
			}
		case session.TypeToolReconcile:
			rc, err := session.DecodeData[session.ToolReconcile](rec)
			require.NoError(tr.t, err)
			calls[rc.ID].reconciled = &rc
		}
	}
	return calls
}

// happened counts the effects in the effects file: keyed ones by key,
// plain ones by tag.
func (tr *effectsTrial) happened() (keyed, plain map[string]int) {
	keyed, plain = map[string]int{}, map[string]int{}
	b, err := os.ReadFile(tr.effects)
	if os.IsNotExist(err) {
		return keyed, plain
	}
	require.NoError(tr.t, err)
	for l := range strings.Lines(string(b)) {
		switch f := strings.Fields(l); len(f) {
		case 2:
			keyed[f[1]]++
		case 1:
			plain[f[0]]++
		}
	}
	return keyed, plain
}

// reconcile logs the real outcome of every call of effect the log leaves
// unknown: through the CLI, or through the API of a `vigil serve`.
func (tr *effectsTrial) reconcile(id string, calls map[string]*effectCall, viaAPI bool) {
	_, plain := tr.happened()
	var s *served
	for _, c := range calls {
		if !c.unknown || c.reconciled != nil {
			continue
		}
		require.Equal(tr.t, "effect", c.name, "an idempotent call left unknown after the continuation")
		body := map[string]string{"failed": "no effect was found"}
		if plain[c.tag] > 0 {
			body = map[string]string{"result": "done " + c.tag}
		}
		if viaAPI {
			if s == nil {
				tr.configure("")
				s = serve(tr.t, tr.dir, "tok")
				defer s.stop()
			}
			b, err := json.Marshal(body)
			require.NoError(tr.t, err)
			s.call(http.StatusOK, "POST", "/v1/sessions/"+id+"/reconcile/"+c.id, string(b), nil)
			continue
		}
		args := []string{"reconcile", id, c.id}
		if r, ok := body["result"]; ok {
			f := filepath.Join(tr.t.TempDir(), "result")
			require.NoError(tr.t, os.WriteFile(f, []byte(r), 0o644))
			args = append(args, "--result", f)
		} else {
			args = append(args, "--failed", body["failed"])
		}
		out, err := tr.vigil(args...)
		require.NoError(tr.t, err, out)
	}
}

func runEffectsTrial(t *testing.T, modelURL string, i int) {
	dir := t.TempDir()
	tr := &effectsTrial{t: t, dir: dir, effects: filepath.Join(dir, "effects"), model: modelURL}
	tr.killedRun(i % 3)

	logs, err := filepath.Glob(filepath.Join(dir, "sessions", "*.jsonl"))
	require.NoError(t, err)
	if len(logs) == 0 {
		keyed, plain := tr.happened()
		assert.Empty(t, keyed, "effects without a session")
		assert.Empty(t, plain, "effects without a session")
		return
	}
	require.Len(t, logs, 1)
	id := strings.TrimSuffix(filepath.Base(logs[0]), ".jsonl")

	tr.configure("")
	if out, err := tr.vigil("run", "-s", id, "--continue"); err != nil {
		// A kill before the turn logged anything leaves nothing to
		// carry on.
		require.Contains(t, out, "continue", out)
	}
	calls := tr.calls(id)
	tr.reconcile(id, calls, i%2 == 1)
	calls = tr.calls(id)

	keyed, plain := tr.happened()
	var retried, reconciled int
	for _, c := range calls {
		if c.reconciled != nil && c.reconciled.By == "" {
			retried++
		} else if c.reconciled != nil {
			reconciled++
		}
	}
	t.Logf("mode %d: %d calls, %d effects; %d idempotent calls retried, %d others reconciled", i%3, len(calls), len(keyed)+len(plain), retried, reconciled)
	for _, c := range calls {
		switch c.name {
		case "keyed_effect":
			key := session.IdempotencyKey(id, c.id)
			if c.started {
				assert.Equal(t, 1, keyed[key], "the idempotent call %s had its effect %d times", c.id, keyed[key])
			}
			assert.LessOrEqual(t, keyed[key], 1, "the idempotent call %s", c.id)
		case "effect":
			assert.LessOrEqual(t, plain[c.tag], 1, "the call %s had its effect %d times", c.id, plain[c.tag])
		}
		if c.unknown {
			require.NotNil(t, c.reconciled, "the call %s is still unknown", c.id)
			happened := keyed[session.IdempotencyKey(id, c.id)] > 0 || plain[c.tag] > 0
			assert.Equal(t, happened, c.reconciled.Error == nil, "the reconciled outcome of %s is the real one: %+v", c.id, c.reconciled)
		}
	}
	// Every effect that happened has its call's tool/start in the log.
	byTag := map[string]*effectCall{}
	for _, c := range calls {
		byTag[c.tag] = c
	}
	for tag := range plain {
		c := byTag[tag]
		assert.True(t, c != nil && c.started, "the effect %s happened, but the log has no tool/start for it", tag)
	}
	for key := range keyed {
		_, callID, ok := session.ParseIdempotencyKey(key)
		require.True(t, ok)
		c := calls[callID]
		assert.True(t, c != nil && c.started, "the effect of %s happened, but the log has no tool/start for it", key)
	}

	out, err := tr.vigil("verify", id)
	assert.NoError(t, err, out)
	out, err = tr.vigil("replay", id)
	assert.NoError(t, err, out)
}
