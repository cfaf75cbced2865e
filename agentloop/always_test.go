package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
)

// counting returns tools named names that count their runs.
func counting(names ...string) (func() map[string]int, []agentloop.Tool) {
	var mu sync.Mutex
	ran := map[string]int{}
	var tools []agentloop.Tool
	for _, n := range names {
		tools = append(tools, funcTool{name: n, fn: func(context.Context, json.RawMessage) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			ran[n]++
			return "ok", nil
		}})
	}
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return map[string]int{"read": ran["read"], "write": ran["write"]}
	}, tools
}

// decisionsOf returns the approval/decision data of recs, by call id.
func decisionsOf(t *testing.T, recs []session.Record) map[string]session.ApprovalDecision {
	out := map[string]session.ApprovalDecision{}
	for _, r := range ofType(recs, session.TypeApprovalDecision) {
		d := decode[session.ApprovalDecision](t, r)
		out[d.ID] = d
	}
	return out
}

// TestAlwaysForThisSessionDecidesTheLaterCallsOfTheTool: after an allow
// of scope session for a read, a later read (in a later turn) is logged
// with its request and a session-rule decision citing that allow, and
// runs without suspending. A write, asked for the same reason, still
// suspends; a covered read of its step is decided at once and runs when
// the step resumes; a call-scoped allow of the write covers nothing. The
// log verifies offline (and was checked live, strict, at every append).
func TestAlwaysForThisSessionDecidesTheLaterCallsOfTheTool(t *testing.T) {
	ctx := context.Background()
	store, err := jsonl.Open(t.TempDir())
	require.NoError(t, err)
	defer store.Close()
	e := newEnvWith(t, store)
	askFor(e, "read", "write")
	ran, tools := counting("read", "write")
	read := func(p string) scripted.ToolCall {
		return scripted.ToolCall{Name: "read", Arguments: map[string]any{"p": p}}
	}
	write := scripted.ToolCall{Name: "write", Arguments: map[string]any{"p": "x"}}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithTools(tools...), agentloop.WithProvider(script(t,
		scripted.Reply{ToolCalls: []scripted.ToolCall{read("1")}}, scripted.Reply{Text: "read 1"},
		scripted.Reply{ToolCalls: []scripted.ToolCall{read("2")}}, scripted.Reply{Text: "read 2"},
		scripted.Reply{ToolCalls: []scripted.ToolCall{read("3"), write}}, scripted.Reply{Text: "read 3, wrote"},
		scripted.Reply{ToolCalls: []scripted.ToolCall{write}}, scripted.Reply{Text: "done"},
	)))
	sess := e.session()

	res, err := a.Run(ctx, sess, "read 1")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	always, err := agentloop.Decide(ctx, sess, res.Pending[0].Call.ID, agentloop.Decision{Allow: true, By: "ann", Scope: session.ScopeSession})
	require.NoError(t, err)
	res, err = a.Resume(ctx, sess)
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, res.Reason)

	// Turn 2: the read runs at once.
	from := sess.Len()
	res, err = a.Run(ctx, sess, "read 2")
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, map[string]int{"read": 2, "write": 0}, ran())
	read2 := decode[session.ToolCall](t, ofType(sess.Records()[from:], session.TypeToolCall)[0])
	assert.Equal(t, session.ApprovalDecision{
		ID: read2.ID, Allow: true, By: session.SessionRuleBy, Cites: always.Seq(),
		Reason: fmt.Sprintf("allowed for this session by ann (seq %d)", always.Seq()),
	}, decisionsOf(t, sess.Records())[read2.ID])
	var order []string
	for _, r := range sess.Records()[from:] {
		if typ := r.Type(); strings.HasPrefix(typ, "tool/") || strings.HasPrefix(typ, "approval/") || strings.HasPrefix(typ, "step/") {
			order = append(order, typ)
		}
	}
	assert.Equal(t, []string{
		session.TypeStepStart, session.TypeToolCall, session.TypeApprovalRequest, session.TypeApprovalDecision, session.TypeToolStart, session.TypeToolResult,
		session.TypeStepEnd, session.TypeStepStart, session.TypeStepEnd,
	}, order, "the covered call is requested, decided and run in its place")

	// Turn 3: the write waits; the read is decided, and runs on resume.
	res, err = a.Run(ctx, sess, "read 3 and write")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	require.Len(t, res.Pending, 1)
	assert.Equal(t, "write", res.Pending[0].Call.Name)
	s := session.Suspended(sess.Records())
	require.NotNil(t, s)
	require.Len(t, s.Calls, 2)
	assert.Equal(t, session.SessionRuleBy, s.Calls[0].Decision.By)
	assert.Equal(t, map[string]int{"read": 2, "write": 0}, ran(), "no call runs before the step's requests are all decided")
	_, err = agentloop.Decide(ctx, sess, res.Pending[0].Call.ID, agentloop.Decision{Allow: true, By: "bob"})
	require.NoError(t, err)
	res, err = a.Resume(ctx, sess)
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, map[string]int{"read": 3, "write": 1}, ran())

	// Turn 4: bob's call-scoped allow of the write covers nothing.
	res, err = a.Run(ctx, sess, "write")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	require.Len(t, res.Pending, 1)
	assert.Equal(t, "write", res.Pending[0].Call.Name)
	byRule := 0
	for _, d := range decisionsOf(t, sess.Records()) {
		if d.By == session.SessionRuleBy {
			byRule++
			assert.Equal(t, always.Seq(), d.Cites)
		}
	}
	assert.Equal(t, 2, byRule)
	require.NoError(t, sess.Flush(ctx))
	verifyFile(t, store.Path(sess.ID()))
}

// TestAlwaysDecidesTheStepsOtherCoveredCalls: two reads of one step
// wait; "always" for the first decides the second (citing it) and the
// step is ready to resume; a write of the step still waits.
func TestAlwaysDecidesTheStepsOtherCoveredCalls(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	askFor(e, "read", "write")
	ran, tools := counting("read", "write")
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithTools(tools...), agentloop.WithProvider(script(t,
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "read"}, {Name: "write"}, {Name: "read"}}}, scripted.Reply{Text: "done"})))
	sess := e.session()
	res, err := a.Run(ctx, sess, "go")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	require.Len(t, res.Pending, 3)
	first, wr, second := res.Pending[0].Call.ID, res.Pending[1].Call.ID, res.Pending[2].Call.ID
	always, err := agentloop.Decide(ctx, sess, first, agentloop.Decision{Allow: true, By: "ann", Scope: session.ScopeSession})
	require.NoError(t, err)
	s := session.Suspended(sess.Records())
	require.NotNil(t, s)
	require.Len(t, s.Undecided(), 1)
	assert.Equal(t, wr, s.Undecided()[0].Call.ID)
	d := decisionsOf(t, sess.Records())[second]
	assert.Equal(t, session.SessionRuleBy, d.By)
	assert.Equal(t, always.Seq(), d.Cites)
	_, err = agentloop.Decide(ctx, sess, second, agentloop.Decision{Allow: false, By: "bob"})
	var de *session.DecidedError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, session.SessionRuleBy, de.Decision.By)

	_, err = agentloop.Decide(ctx, sess, wr, agentloop.Decision{Allow: true, By: "ann"})
	require.NoError(t, err)
	res, err = a.Resume(ctx, sess)
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, map[string]int{"read": 2, "write": 1}, ran())
}

// TestDecideRefusesASessionScopedDenialAndASessionRuleDecision: neither
// is a person's to give; nothing is logged.
func TestDecideRefusesASessionScopedDenialAndASessionRuleDecision(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	askFor(e, "read")
	_, tools := counting("read")
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithTools(tools...), agentloop.WithProvider(script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "read"}}})))
	sess := e.session()
	res, err := a.Run(ctx, sess, "go")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	n := sess.Len()
	for name, d := range map[string]agentloop.Decision{
		"always deny":  {Allow: false, By: "ann", Scope: session.ScopeSession},
		"session-rule": {Allow: true, By: session.SessionRuleBy},
	} {
		_, err := agentloop.Decide(ctx, sess, res.Pending[0].Call.ID, d)
		assert.ErrorIs(t, err, session.ErrInvalidDecision, name)
	}
	assert.Equal(t, n, sess.Len())
}
