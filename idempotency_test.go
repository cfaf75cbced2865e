package vigil_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	jsonlstore "github.com/vigil-run/vigil/plugins/store/jsonl"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// chargeConfig configures test/charge.
type chargeConfig struct {
	// File is where each run of the tool appends the key it was given,
	// one a line: the tool's effect.
	File string `json:"file"`
	// Die kills the process with SIGKILL once the effect is written.
	Die bool `json:"die"`
}

// charge is an idempotent Go tool whose effect is a line in a file: the
// idempotency key its call carried.
type charge struct{ cfg chargeConfig }

func (charge) Spec() session.ToolSpec {
	return session.ToolSpec{Name: "charge", Description: "charges a card", Parameters: json.RawMessage(`{"type":"object"}`), Idempotent: true}
}

func (c charge) Execute(ctx context.Context, _ json.RawMessage) (string, error) {
	f, err := os.OpenFile(c.cfg.File, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return "", err
	}
	_, err = fmt.Fprintln(f, agentloop.IdempotencyKey(ctx))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if c.cfg.Die {
		// Until tool/start is durable before a tool runs (issue 29, item
		// 0), give the store's flush timer time to write it.
		time.Sleep(200 * time.Millisecond)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	return "charged", nil
}

func init() {
	bus.RegisterFunc("test/charge", "an idempotent tool that logs its key to a file", func(c *bus.Context, cfg chargeConfig) error {
		_, err := agentloop.ProvideTool(c, charge{cfg})
		return err
	})
}

// chargeAgent is a jsonl-backed composition with charge and the model
// script given; ask makes every charge wait for a person.
func chargeAgent(dir string, cfg chargeConfig, ask bool, script ...scripted.Reply) vigil.Source {
	es := []config.Entry{
		vigil.Plugin("store/jsonl", &jsonlstore.Config{Dir: dir}),
		vigil.Plugin("provider/scripted", scripted.Config{Script: script}),
		vigil.Plugin("test/charge", &cfg),
	}
	if ask {
		es = append(es, vigil.Plugin("approvals", approvals.Config{Rules: []approvals.Rule{{Tool: "charge", Action: "ask", Reason: "money"}}}))
	}
	es = append(es, vigil.Plugin("agent", nil))
	return vigil.Compose(es...)
}

var chargeOnce = scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "charge", Arguments: map[string]any{}}}}

// effects reads the keys the charge tool was run with.
func effects(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []string
	for s := bufio.NewScanner(f); s.Scan(); {
		out = append(out, s.Text())
	}
	return out
}

// callKeys returns the idempotency key of every tool/call of a log.
func callKeys(t *testing.T, log *session.Log) []string {
	t.Helper()
	var out []string
	for _, r := range log.Records {
		if r.Type() == session.TypeToolCall {
			c, err := session.DecodeData[session.ToolCall](r)
			require.NoError(t, err)
			out = append(out, session.IdempotencyKey(log.Info.ID, c.ID))
		}
	}
	return out
}

const chargeDirEnv = "VIGIL_CHARGE_TRIAL_DIR"

// TestChargeTrialChild is the process TestTheKeyOutlivesAKilledProcess
// kills: it runs a turn whose charge call writes its key and dies.
func TestChargeTrialChild(t *testing.T) {
	dir := os.Getenv(chargeDirEnv)
	if dir == "" {
		t.Skip("the child of TestTheKeyOutlivesAKilledProcess")
	}
	rt := open(t, chargeAgent(filepath.Join(dir, "sessions"), chargeConfig{File: filepath.Join(dir, "effects"), Die: true}, false, chargeOnce))
	_, err := rt.Turn(context.Background(), vigil.TurnOptions{Prompt: "charge it"})
	t.Fatalf("the tool did not kill the process: %v", err)
}

// TestTheKeyOutlivesAKilledProcess: a process killed (SIGKILL) right
// after an idempotent Go tool's effect leaves a log from which the next
// process derives the key the tool ran with (the call's
// TOOL_OUTCOME_UNKNOWN result names the same session and call), and the
// continuation goes on from it; the log verifies. The key is the same
// wherever and whenever the call is run again.
func TestTheKeyOutlivesAKilledProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChargeTrialChild$")
	cmd.Env = append(os.Environ(), chargeDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.True(t, ee.Sys().(syscall.WaitStatus).Signaled(), "killed: %s", out)
	ran := effects(t, filepath.Join(dir, "effects"))
	require.Len(t, ran, 1, "the effect happened once before the kill")

	ctx := context.Background()
	sessions := filepath.Join(dir, "sessions")
	rt := open(t, chargeAgent(sessions, chargeConfig{File: filepath.Join(dir, "effects")}, false, scripted.Reply{Text: "It may have been charged."}))
	infos, err := rt.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	id := infos[0].ID
	log, err := rt.Session(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, ran, callKeys(t, log), "the logged call names the key the tool ran with")
	res, err := rt.Turn(ctx, vigil.TurnOptions{Session: id, Continue: true})
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	log, err = rt.Session(ctx, id)
	require.NoError(t, err)
	var unknown []string
	for _, r := range log.Records {
		if res, err := session.DecodeData[session.ToolResult](r); err == nil && r.Type() == session.TypeToolResult && res.Error != nil && res.Error.Code == session.CodeToolOutcomeUnknown {
			unknown = append(unknown, session.IdempotencyKey(id, res.ID))
		}
	}
	assert.Equal(t, ran, unknown, "repair answered the call whose key the tool saw as unknown")
	// The tool is idempotent: the continuation ran the call again, with
	// its key, and logged the outcome.
	assert.Equal(t, append(ran, ran...), effects(t, filepath.Join(dir, "effects")))
	var reconciled []string
	for _, r := range log.Records {
		if rc, err := session.DecodeData[session.ToolReconcile](r); err == nil && r.Type() == session.TypeToolReconcile {
			reconciled = append(reconciled, session.IdempotencyKey(id, rc.ID)+" "+rc.Content)
		}
	}
	assert.Equal(t, []string{ran[0] + " charged"}, reconciled)
	verifyStored(t, sessions, id)
}

// TestTheKeyIsTheCallsInEveryProcess: a call logged by one process and
// run by another (a suspended step decided and resumed elsewhere) runs
// with the key its session and call id make, as does a call run where it
// was asked; the runs of two calls have two keys.
func TestTheKeyIsTheCallsInEveryProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sessions, file := filepath.Join(dir, "sessions"), filepath.Join(dir, "effects")

	a := open(t, chargeAgent(sessions, chargeConfig{File: file}, false, chargeOnce, scripted.Reply{Text: "Charged."}))
	res, err := a.Turn(ctx, vigil.TurnOptions{Prompt: "charge it"})
	require.NoError(t, err)
	id := res.Session
	require.NoError(t, a.Close())

	b := open(t, chargeAgent(sessions, chargeConfig{File: file}, true, chargeOnce))
	_, err = b.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "again"})
	require.ErrorIs(t, err, vigil.ErrSuspended)
	require.NoError(t, b.Close())

	c := open(t, chargeAgent(sessions, chargeConfig{File: file}, true, scripted.Reply{Text: "Charged again."}))
	pending, err := c.Pending(ctx, id)
	require.NoError(t, err)
	require.Len(t, pending.Undecided(), 1)
	res, err = c.Decide(ctx, vigil.DecideOptions{Session: id, Call: pending.Undecided()[0].Call.ID, Decision: vigil.Decision{Allow: true, By: "ann"}})
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)

	log, err := c.Session(ctx, id)
	require.NoError(t, err)
	keys := callKeys(t, log)
	require.Len(t, keys, 2)
	assert.NotEqual(t, keys[0], keys[1])
	assert.Equal(t, keys, effects(t, file))
	verifyStored(t, sessions, id)

	// A replay runs no tool (the recording answers), logs the declaration
	// as recorded, and re-derives every request: the same calls, whose
	// keys the recorded log gives.
	root := bus.New()
	defer root.Dispose()
	rc := root.Context()
	_, err = rc.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	require.NoError(t, err)
	rr, err := replay.Run(ctx, rc, live.NewManager(rc, memory.New()), log.Records)
	require.NoError(t, err)
	assert.True(t, rr.Identical(), "%+v", rr.Steps)
	assert.Equal(t, keys, effects(t, file), "the replay ran no tool")
	for _, r := range rr.Session.Records() {
		if r.Type() == session.TypeRequestHeader {
			h, err := session.DecodeData[session.RequestHeader](r)
			require.NoError(t, err)
			require.Len(t, h.Header.Tools, 1)
			assert.True(t, h.Header.Tools[0].Idempotent)
		}
	}
}
