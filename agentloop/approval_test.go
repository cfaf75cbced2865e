package agentloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
)

// askFor answers ask for the tools named, allow for the others.
func askFor(e *env, names ...string) {
	agentloop.ToolApprove.On(e.c, func(_ context.Context, q *agentloop.ApprovalQuery) (agentloop.Verdict, error) {
		for _, n := range names {
			if q.Call.Name == n {
				return agentloop.Verdict{Action: session.ActionAsk, By: "test-policy", Reason: "reads need a yes"}, nil
			}
		}
		return agentloop.Verdict{}, nil
	})
}

// capture records the requests its provider is handed.
type capture struct {
	agentloop.Provider
	mu   sync.Mutex
	reqs []*agentloop.Request
}

func (c *capture) Stream(ctx context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	c.mu.Unlock()
	return c.Provider.Stream(ctx, req)
}

func (c *capture) last() *agentloop.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reqs[len(c.reqs)-1]
}

func verifyFile(t *testing.T, path string) {
	t.Helper()
	rep, err := invariants.VerifyFile(path)
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
}

// TestAskSuspendsTheTurnAndADecisionInAnotherProcessCompletesIt: the
// step runs the calls that need no decision, then suspends with its log
// flushed; the log loads elsewhere without repair, refuses a new prompt,
// takes a decision, survives another restart, and resumes to completion.
// Each log along the way verifies.
func TestAskSuspendsTheTurnAndADecisionInAnotherProcessCompletesIt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, tools := workspace(t)
	cfg := agentloop.Config{System: "s", Model: "scripted"}
	reply := scripted.Reply{Text: "Reading.", ToolCalls: []scripted.ToolCall{
		{Name: "read_file", Arguments: map[string]any{"path": "go.mod"}},
		{Name: "list_dir", Arguments: map[string]any{"path": "."}},
	}}

	store, err := jsonl.Open(dir)
	require.NoError(t, err)
	e := newEnvWith(t, store)
	askFor(e, "read_file")
	a := agentloop.New(e.c, cfg, agentloop.WithProvider(script(t, reply)), agentloop.WithTools(tools...))
	sess := e.session()
	res, err := a.Run(ctx, sess, "read go.mod")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	require.NotNil(t, res)
	assert.Equal(t, agentloop.ReasonSuspended, res.Reason)
	require.Len(t, res.Pending, 1)
	call := res.Pending[0].Call
	assert.Equal(t, "read_file", call.Name)
	assert.JSONEq(t, `{"path":"go.mod"}`, call.Arguments)
	assert.Equal(t, "test-policy", res.Pending[0].Request.By)
	assert.Equal(t, "reads need a yes", res.Pending[0].Request.Reason)
	assert.Contains(t, err.Error(), call.ID)

	recs := sess.Records()
	assert.Len(t, ofType(recs, session.TypeApprovalRequest), 1)
	assert.Equal(t, session.TypeToolResult, recs[len(recs)-2].Type(), "the step is left open after the calls that need no decision")
	// and the reply's usage, which the step/end logged in another process
	// carries.
	require.Equal(t, session.TypeStepUsage, recs[len(recs)-1].Type())
	usage := decode[session.Usage](t, recs[len(recs)-1])
	assert.Equal(t, res.Usage, usage)
	assert.Positive(t, usage.Input)
	assert.Len(t, ofType(recs, session.TypeToolStart), 1, "list_dir ran, read_file did not")
	assert.Empty(t, ofType(recs, session.TypeStepEnd))
	assert.Empty(t, ofType(recs, session.TypeTurnEnd))
	// Flushed before Run returned: the file holds every record.
	data, err := os.ReadFile(store.Path(sess.ID()))
	require.NoError(t, err)
	assert.Equal(t, len(recs)+1, bytes.Count(data, []byte{'\n'}))
	verifyFile(t, store.Path(sess.ID()))
	require.NoError(t, sess.Close(ctx))
	require.NoError(t, store.Close())

	// Process 2: loads without repair; a prompt is refused; a decision.
	store2, err := jsonl.Open(dir)
	require.NoError(t, err)
	e2 := newEnvWith(t, store2)
	s2, err := e2.mgr.Open(ctx, sess.ID())
	require.NoError(t, err)
	require.Len(t, s2.Records(), len(recs), "a suspended tail is not repaired")
	b := agentloop.New(e2.c, cfg, agentloop.WithProvider(script(t)), agentloop.WithTools(tools...))
	_, err = b.Run(ctx, s2, "something else")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	assert.Contains(t, err.Error(), call.ID)
	_, err = b.Resume(ctx, s2)
	require.ErrorIs(t, err, agentloop.ErrNotReady)
	assert.Len(t, s2.Records(), len(recs), "refusals log nothing")
	_, err = agentloop.Decide(ctx, s2, call.ID, agentloop.Decision{Allow: true, By: "ann"})
	require.NoError(t, err)
	_, err = agentloop.Decide(ctx, s2, call.ID, agentloop.Decision{Allow: false, By: "bob"})
	var de *session.DecidedError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "ann", de.Decision.By)
	_, err = b.Run(ctx, s2, "something else")
	var se *agentloop.SuspendedError
	require.ErrorAs(t, err, &se)
	assert.True(t, se.Decided)
	assert.Contains(t, err.Error(), "wait to be resumed")
	verifyFile(t, store2.Path(sess.ID()))
	require.NoError(t, s2.Close(ctx))
	require.NoError(t, store2.Close())

	// Process 3 (a crash after the decision is no interruption): resumes.
	store3, err := jsonl.Open(dir)
	require.NoError(t, err)
	defer store3.Close()
	e3 := newEnvWith(t, store3)
	s3, err := e3.mgr.Open(ctx, sess.ID())
	require.NoError(t, err)
	require.Len(t, s3.Records(), len(recs)+1)
	c := agentloop.New(e3.c, cfg, agentloop.WithProvider(script(t, scripted.Reply{Text: "It is module x."})), agentloop.WithTools(tools...))
	res, err = c.Resume(ctx, s3)
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, "It is module x.", res.Content)
	assert.Equal(t, 1, res.Turn)
	assert.Equal(t, 2, res.Steps)
	results := ofType(s3.Records(), session.TypeToolResult)
	require.Len(t, results, 2)
	got := decode[session.ToolResult](t, results[1])
	assert.Equal(t, call.ID, got.ID)
	assert.Nil(t, got.Error)
	assert.Contains(t, got.Content, "module x")
	require.NoError(t, s3.Flush(ctx))
	verifyFile(t, store3.Path(sess.ID()))
	assert.Equal(t, 2, verifyDigests(t, s3.Records()))
	// Each step's step/end carries its usage, the suspended one's too.
	ends := ofType(s3.Records(), session.TypeStepEnd)
	require.Len(t, ends, 2)
	assert.Equal(t, &usage, decode[session.StepEnd](t, ends[0]).Usage)
	assert.Equal(t, &res.Usage, decode[session.StepEnd](t, ends[1]).Usage)

	// The session takes new prompts again.
	_, err = agentloop.Decide(ctx, s3, call.ID, agentloop.Decision{Allow: true})
	assert.ErrorIs(t, err, session.ErrNotSuspended)
}

func TestDeniedCallIsAnsweredApprovalDeniedAndTheModelSeesWhy(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	askFor(e, "read_file")
	_, tools := workspace(t)
	prov := &capture{Provider: script(t,
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "read_file", Arguments: map[string]any{"path": "go.mod"}}}},
		scripted.Reply{Text: "Understood."})}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(prov), agentloop.WithTools(tools...))
	sess := e.session()
	res, err := a.Run(ctx, sess, "read it")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	id := res.Pending[0].Call.ID
	_, err = agentloop.Decide(ctx, sess, id, agentloop.Decision{Allow: false, By: "ann", Reason: "not now"})
	require.NoError(t, err)
	res, err = a.Resume(ctx, sess)
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Empty(t, ofType(sess.Records(), session.TypeToolStart), "a denied call never runs")
	msgs := prov.last().Messages
	tool := msgs.At(msgs.Len() - 1)
	assert.Equal(t, session.RoleTool, tool.Role)
	assert.Equal(t, id, tool.ToolCallID)
	assert.Equal(t, "error APPROVAL_DENIED: ann denied this call: not now", tool.Content)
}

func TestPolicyDenialIsAResultTheModelSeesAndTheTurnGoesOn(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	agentloop.ToolApprove.On(e.c, func(_ context.Context, q *agentloop.ApprovalQuery) (agentloop.Verdict, error) {
		if q.Call.Name == "rm" {
			return agentloop.Verdict{Action: session.ActionDeny, Reason: "no deletes"}, nil
		}
		return agentloop.Verdict{}, nil
	})
	ran := map[string]bool{}
	var mu sync.Mutex
	tool := func(name string) agentloop.Tool {
		return funcTool{name: name, fn: func(context.Context, json.RawMessage) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			ran[name] = true
			return "done", nil
		}}
	}
	prov := script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "echo"}, {Name: "rm"}, {Name: "ls"}}}, scripted.Reply{Text: "ok"})
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(prov), agentloop.WithTools(tool("echo"), tool("rm"), tool("ls")))
	sess := e.session()
	res, err := a.Run(ctx, sess, "go")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, map[string]bool{"echo": true, "ls": true}, ran)
	var names, codes []string
	for _, r := range ofType(sess.Records(), session.TypeToolResult) {
		res := decode[session.ToolResult](t, r)
		names = append(names, res.Name)
		code := ""
		if res.Error != nil {
			code = res.Error.Code + ": " + res.Error.Message
		}
		codes = append(codes, code)
	}
	// The denial is logged before any call of the step runs (a crash
	// while echo runs must not lose it); the others keep the model's
	// call order.
	assert.Equal(t, []string{"rm", "echo", "ls"}, names, "the denial first, then the model's call order")
	assert.Equal(t, []string{"POLICY_DENIED: the approval policy denies this call: no deletes", "", ""}, codes)
}

// TestAVetoListenerMayAnswerAsk: a bus.Veto listener of the tool/approve
// dispatch returning an *AskError asks, in the name of its plugin; any
// other veto blocks the turn as a veto of a tool/call would.
func TestAVetoListenerMayAnswerAsk(t *testing.T) {
	cases := []struct {
		name   string
		answer error
		check  func(t *testing.T, res *agentloop.TurnResult, err error)
	}{
		{"ask", &agentloop.AskError{Reason: "careful"}, func(t *testing.T, res *agentloop.TurnResult, err error) {
			require.ErrorIs(t, err, agentloop.ErrSuspended)
			require.Len(t, res.Pending, 1)
			assert.Equal(t, session.ApprovalRequest{ID: res.Pending[0].Call.ID, By: "gate", Reason: "careful"}, res.Pending[0].Request)
		}},
		{"refuse", errors.New("never"), func(t *testing.T, res *agentloop.TurnResult, err error) {
			var be *agentloop.BlockedError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, "gate", be.Plugin)
			assert.Equal(t, session.ReasonBlocked, res.Reason)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			_, err := e.c.Plugin(bus.PluginFunc("gate", func(c *bus.Context, _ struct{}) error {
				bus.Veto.On(c, func(_ context.Context, d bus.Dispatch) error {
					if d.Name == agentloop.ToolApprove.Name() {
						return tc.answer
					}
					return nil
				})
				return nil
			}), struct{}{})
			require.NoError(t, err)
			echo := funcTool{name: "echo", fn: func(context.Context, json.RawMessage) (string, error) { return "x", nil }}
			a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "echo"}}})), agentloop.WithTools(echo))
			res, err := a.Run(context.Background(), e.session(), "go")
			tc.check(t, res, err)
		})
	}
}

func TestDecideRefusesAnUnknownOrNotPendingCallAndLogsNothing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	askFor(e, "ask")
	echo := func(name string) agentloop.Tool {
		return funcTool{name: name, fn: func(context.Context, json.RawMessage) (string, error) { return "x", nil }}
	}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "run"}, {Name: "ask"}}})), agentloop.WithTools(echo("run"), echo("ask")))
	sess := e.session()
	res, err := a.Run(ctx, sess, "go")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	ran := decode[session.ToolCall](t, ofType(sess.Records(), session.TypeToolCall)[0])
	n := sess.Len()
	for _, tc := range []struct {
		id   string
		want error
	}{{"nope", session.ErrUnknownCall}, {ran.ID, session.ErrNotPending}} {
		_, err := agentloop.Decide(ctx, sess, tc.id, agentloop.Decision{Allow: true})
		assert.ErrorIs(t, err, tc.want, tc.id)
	}
	assert.Equal(t, n, sess.Len())
	_, err = a.Resume(ctx, sess)
	assert.ErrorIs(t, err, agentloop.ErrNotReady)
	assert.Len(t, res.Pending, 1)
}

// TestACancelledTurnDoesNotSuspend: a turn cancelled while its step ran
// the calls that need no decision answers the asked ones TOOL_NOT_STARTED
// and ends aborted instead of waiting.
func TestACancelledTurnDoesNotSuspend(t *testing.T) {
	e := newEnv(t)
	askFor(e, "ask")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelling := funcTool{name: "run", fn: func(context.Context, json.RawMessage) (string, error) { cancel(); return "x", nil }}
	asked := funcTool{name: "ask", fn: func(context.Context, json.RawMessage) (string, error) { return "x", nil }}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "run"}, {Name: "ask"}}})), agentloop.WithTools(cancelling, asked))
	sess := e.session()
	res, err := a.Run(ctx, sess, "go")
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, session.ReasonAborted, res.Reason)
	results := ofType(sess.Records(), session.TypeToolResult)
	require.Len(t, results, 2)
	r := decode[session.ToolResult](t, results[1])
	require.NotNil(t, r.Error)
	assert.Equal(t, session.CodeToolNotStarted, r.Error.Code)
	assert.Nil(t, session.Suspended(sess.Records()))
}
