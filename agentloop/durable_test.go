package agentloop_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
)

// TestAToolRunsOnlyOnceItsStartIsDurable: on a JSONL store that would
// keep appends in memory for an hour, each tool finds its tool/start,
// and its batch's, already in the file when it runs, and a step's
// denial logged before the tool that runs first.
func TestAToolRunsOnlyOnceItsStartIsDurable(t *testing.T) {
	ctx := context.Background()
	store, err := jsonl.Open(t.TempDir(), jsonl.WithSyncInterval(time.Hour))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	e := newEnvWith(t, store)
	agentloop.ToolApprove.On(e.c, func(_ context.Context, q *agentloop.ApprovalQuery) (agentloop.Verdict, error) {
		if q.Call.Name == "rm" {
			return agentloop.Verdict{Action: session.ActionDeny, Reason: "no deletes"}, nil
		}
		return agentloop.Verdict{}, nil
	})
	sess := e.session()
	var (
		mu   sync.Mutex
		seen []string // per run: the file's tool/starts and POLICY_DENIED results
	)
	onDisk := func(context.Context, json.RawMessage) (string, error) {
		b, err := os.ReadFile(store.Path(sess.ID()))
		if err != nil {
			return "", err
		}
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, strings.Repeat("s", strings.Count(string(b), `"type":"tool/start"`))+strings.Repeat("d", strings.Count(string(b), "POLICY_DENIED")))
		return "ok", nil
	}
	prov := script(t,
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "read"}, {Name: "read"}, {Name: "rm"}}},
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "write"}}},
		scripted.Reply{Text: "done"})
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(prov),
		agentloop.WithTools(funcTool{name: "read", safe: true, fn: onDisk}, funcTool{name: "write", fn: onDisk}, funcTool{name: "rm", fn: onDisk}))
	res, err := a.Run(ctx, sess, "go")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	// The two reads are one batch: both starts are durable before either
	// runs, and so is the step's denial, logged first.
	assert.Equal(t, []string{"ssd", "ssd", "sssd"}, seen)
}

// TestAResumedStepAnswersItsDenialsBeforeItRunsACall: a denied call that
// comes after an allowed one is answered before the allowed call starts,
// so a crash while that call runs leaves the denial in the log.
func TestAResumedStepAnswersItsDenialsBeforeItRunsACall(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	agentloop.ToolApprove.On(e.c, func(context.Context, *agentloop.ApprovalQuery) (agentloop.Verdict, error) {
		return agentloop.Verdict{Action: session.ActionAsk, By: "test-policy"}, nil
	})
	sess := e.session()
	var types []string
	run := func(context.Context, json.RawMessage) (string, error) {
		for _, r := range sess.Records() {
			types = append(types, r.Type())
		}
		return "ok", nil
	}
	prov := script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "go"}, {Name: "stop"}}}, scripted.Reply{Text: "done"})
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(prov), agentloop.WithTools(funcTool{name: "go", fn: run}, funcTool{name: "stop", fn: run}))
	res, err := a.Run(ctx, sess, "go")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	require.Len(t, res.Pending, 2)
	_, err = agentloop.Decide(ctx, sess, res.Pending[0].Call.ID, agentloop.Decision{Allow: true, By: "ann"})
	require.NoError(t, err)
	_, err = agentloop.Decide(ctx, sess, res.Pending[1].Call.ID, agentloop.Decision{Allow: false, By: "ann", Reason: "no"})
	require.NoError(t, err)
	res, err = a.Resume(ctx, sess)
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	// When the allowed call runs, the log ends with the denial's result
	// and then its tool/start.
	require.GreaterOrEqual(t, len(types), 2)
	assert.Equal(t, []string{session.TypeToolResult, session.TypeToolStart}, types[len(types)-2:])
}
