//go:build unix

package external_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// funcTool is an in-process tool.
type funcTool struct {
	name string
	run  func(ctx context.Context) (string, error)
}

func (t funcTool) Spec() session.ToolSpec {
	return session.ToolSpec{Name: t.name, Description: t.name}
}

func (t funcTool) Execute(ctx context.Context, _ json.RawMessage) (string, error) {
	return t.run(ctx)
}

// policyFile is a plugins.yaml with the test plugin as entry
// "tool-policy", refusing calls of the tool "danger"; extra is appended
// to its config (an edit re-applies the entry).
func policyFile(t *testing.T, types, extra string) *config.File {
	t.Helper()
	yaml := fmt.Sprintf(`plugins:
  - id: tool-policy
    name: external
    config:
      path: %s
      env: ["VIGIL_TEST_TYPES=%s"]
      config: { veto_tools: "^danger$" }
%s`, bins["testplugin"], types, extra)
	f, err := config.Parse("plugins.yaml", []byte(yaml), os.LookupEnv)
	require.NoError(t, err)
	return f
}

// awaitFailed requires f to fail, within a bound that only a broken test
// reaches.
func awaitFailed(t *testing.T, f *bus.Fiber) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, awaitState(ctx, f, bus.StateFailed))
}

// awaitState waits until f is in state s, or ctx ends.
func awaitState(ctx context.Context, f *bus.Fiber, s bus.State) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for f.State() != s {
		select {
		case <-ctx.Done():
			return fmt.Errorf("fiber still %s: %w", f.State(), ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

func TestKilledPolicyRefusesWhatItValidatedUntilItsEntryIsAppliedAgain(t *testing.T) {
	cases := []struct {
		name  string
		types string // VIGIL_TEST_TYPES
		// refused is the type of the append the guard refuses in the turn
		// the plugin is killed in.
		refused string
		// closer is the code of the synthetic result closing the step.
		closer string
	}{
		// The vetoed call is proposed after the kill and refused.
		{"it validates tool calls", "default", session.TypeToolCall, session.CodeToolNotStarted},
		// The killing tool's own result is refused; the closers (a
		// synthetic result, step/end, turn/end) still pass.
		{"it validates every event", "all", session.TypeToolResult, session.CodeToolOutcomeUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			baseline := h.root.ListenerCount(bus.Veto.Name())
			comp, err := config.Apply(h.c, policyFile(t, tc.types, ""))
			require.NoError(t, err)
			t.Cleanup(func() { _ = comp.Dispose() })
			f := comp.Fiber("tool-policy")
			require.Equal(t, bus.StateActive, f.State())
			validating := h.root.ListenerCount(bus.Veto.Name())
			pid := h.pidOf()

			var ran atomic.Int32
			_, err = agentloop.ProvideTool(h.c, funcTool{name: "danger", run: func(context.Context) (string, error) {
				ran.Add(1)
				return "done the dangerous thing", nil
			}})
			require.NoError(t, err)
			_, err = agentloop.ProvideTool(h.c, funcTool{name: "kill", run: func(ctx context.Context) (string, error) {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					return "", err
				}
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if err := awaitState(ctx, f, bus.StateFailed); err != nil {
					return "", err
				}
				return "killed", nil
			}})
			require.NoError(t, err)

			prov := scriptedProvider(t,
				scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "kill"}}},
				scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "danger"}}},
				scripted.Reply{Text: "never asked"},
			)
			a := agentloop.New(h.c, agentloop.Config{}, agentloop.WithProvider(prov))
			sess := h.session()

			res, runErr := a.Run(context.Background(), sess, "kill the policy, then do it")
			require.Error(t, runErr)
			var down *external.UnavailableError
			require.ErrorAs(t, runErr, &down)
			assert.ErrorIs(t, runErr, external.ErrExited)
			assert.Equal(t, &external.UnavailableError{Entry: "tool-policy", Plugin: "testplugin", Exit: "signal: killed", Type: tc.refused}, down)
			assert.Contains(t, runErr.Error(), `entry "tool-policy"`)
			assert.Contains(t, runErr.Error(), "signal: killed")
			require.NotNil(t, res)
			assert.Equal(t, bus.StateFailed, f.State())
			require.ErrorIs(t, f.Err(), external.ErrExited)

			assert.Zero(t, ran.Load(), "the refused tool never ran")
			recs := sess.Records()
			for _, r := range ofType(recs, session.TypeToolCall) {
				c, err := session.DecodeData[session.ToolCall](r)
				require.NoError(t, err)
				assert.NotEqual(t, "danger", c.Name, "the refused call is not committed")
			}
			results := ofType(recs, session.TypeToolResult)
			r, err := session.DecodeData[session.ToolResult](results[len(results)-1])
			require.NoError(t, err)
			require.NotNil(t, r.Error)
			assert.Equal(t, tc.closer, r.Error.Code, "the step was closed the way crash repair closes one")
			require.Equal(t, session.TypeTurnEnd, recs[len(recs)-1].Type(), "the turn is ended: %v", types(recs))
			verify(t, sess)

			// Until the entry is applied again, the next turn is refused
			// too, and ends cleanly if it started.
			_, err = a.Run(context.Background(), sess, "again")
			require.ErrorAs(t, err, &down)
			assert.Equal(t, h.root.ListenerCount(bus.Veto.Name()), validating, "the guard stands in for the validator")
			verify(t, sess)

			// Editing the entry applies it again: the guard is gone, the
			// restarted plugin validates (and still refuses the call).
			ch, err := comp.Reload(policyFile(t, tc.types, "      timeout: 5s\n"))
			require.NoError(t, err)
			assert.Equal(t, []string{"tool-policy"}, ch.Updated)
			require.Equal(t, bus.StateActive, f.State())
			assert.Equal(t, validating, h.root.ListenerCount(bus.Veto.Name()))
			assert.Less(t, baseline, validating)

			after := agentloop.New(h.c, agentloop.Config{}, agentloop.WithProvider(scriptedProvider(t,
				scripted.Reply{Text: "back"},
				scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "danger"}}},
			)))
			res, err = after.Run(context.Background(), sess, "are you back?")
			require.NoError(t, err)
			assert.Equal(t, "back", res.Content)
			_, err = after.Run(context.Background(), sess, "now do it")
			var veto *external.VetoError
			require.ErrorAs(t, err, &veto, "the live plugin refuses the call itself")
			assert.False(t, errors.As(err, &down), "the guard is gone")
			assert.Zero(t, ran.Load())
			verify(t, sess)
		})
	}
}

func TestCrashedValidator(t *testing.T) {
	userMessage := session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "hi"}}
	crash := func(t *testing.T, h *host, f *bus.Fiber) {
		t.Helper()
		_, err := h.tool("crash").Execute(context.Background(), json.RawMessage("{}"))
		require.Error(t, err)
		awaitFailed(t, f)
	}

	t.Run("fails closed by default", func(t *testing.T) {
		h := newHost(t)
		f := h.mustLoad(&external.Config{Path: bins["testplugin"], Config: map[string]any{"veto": "never matches this"}})
		sess := h.session()
		crash(t, h, f)
		_, err := sess.Append(context.Background(), userMessage)
		var down *external.UnavailableError
		require.ErrorAs(t, err, &down)
		// Outside a plugins.yaml the entry is named after the plugin.
		assert.Equal(t, &external.UnavailableError{Entry: "testplugin", Plugin: "testplugin", Exit: "exit status 3", Type: session.TypeUserMessage}, down)
		assert.Equal(t, 0, sess.Len())
		// Types it did not validate pass.
		_, err = sess.Append(context.Background(), session.Event{Type: session.TypeTurnStart, Turn: 1, Data: session.TurnStart{}})
		require.NoError(t, err)
	})

	t.Run("fail: open lets its events pass", func(t *testing.T) {
		h := newHost(t)
		f := h.mustLoad(&external.Config{Path: bins["testplugin"], Fail: external.FailOpen, Config: map[string]any{"veto": "never matches this"}})
		sess := h.session()
		crash(t, h, f)
		_, err := sess.Append(context.Background(), userMessage)
		require.NoError(t, err)
	})

	t.Run("the guard ends with its entry", func(t *testing.T) {
		h := newHost(t)
		baseline := h.root.ListenerCount(bus.Veto.Name())
		comp, err := config.Apply(h.c, policyFile(t, "default", ""))
		require.NoError(t, err)
		t.Cleanup(func() { _ = comp.Dispose() })
		f := comp.Fiber("tool-policy")
		sess := h.session()
		crash(t, h, f)
		_, err = sess.Append(context.Background(), userMessage)
		require.ErrorIs(t, err, external.ErrExited)

		empty, err := config.Parse("plugins.yaml", []byte("plugins: []\n"), os.LookupEnv)
		require.NoError(t, err)
		ch, err := comp.Reload(empty)
		require.NoError(t, err)
		require.Equal(t, []string{"tool-policy"}, ch.Disposed)
		_, err = sess.Append(context.Background(), userMessage)
		require.NoError(t, err, "a removed entry refuses nothing")
		assert.Equal(t, baseline, h.root.ListenerCount(bus.Veto.Name()))
	})

	t.Run("a failed re-apply keeps the guard", func(t *testing.T) {
		h := newHost(t)
		cfg := &external.Config{Path: bins["testplugin"], Config: map[string]any{"veto": "x"}}
		f := h.mustLoad(cfg)
		sess := h.session()
		crash(t, h, f)
		bad := *cfg
		bad.Config = map[string]any{"fail_configure": true}
		require.Error(t, f.Update(&bad))
		require.Equal(t, bus.StateFailed, f.State())
		_, err := sess.Append(context.Background(), userMessage)
		require.ErrorIs(t, err, external.ErrExited)
		require.NoError(t, f.Update(cfg))
		_, err = sess.Append(context.Background(), userMessage)
		require.NoError(t, err)
	})
}
