package invariants_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

type echoTool string

func (e echoTool) Spec() session.ToolSpec {
	return session.ToolSpec{Name: string(e), Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (e echoTool) Execute(_ context.Context, args json.RawMessage) (string, error) {
	return string(e) + string(args), nil
}

// approvalWorld runs the real loop under the approvals plugin and the
// invariants plugin (strict): read_* and write_file ask (a read of a
// secret by a rule of its own), shell with rm -rf is denied, the rest is
// allowed.
type approvalWorld struct {
	c   *bus.Context
	mgr *live.Manager
}

func newApprovalWorld(t require.TestingT) (*approvalWorld, func()) {
	root := bus.New()
	c := root.Context()
	_, err := c.Plugin(invariants.New(), &invariants.Config{})
	require.NoError(t, err)
	var tick int64
	mgr := live.NewManager(c, memory.New(), live.WithClock(func() time.Time {
		tick++
		return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(tick) * time.Millisecond)
	}))
	_, err = live.Sessions.Provide(c, mgr)
	require.NoError(t, err)
	_, err = c.Plugin(approvals.Plugin, &approvals.Config{Rules: []approvals.Rule{
		// Same tool and reason as the next rule: a session-scoped allow of
		// one covers no call of the other.
		{Tool: "read_file", Arguments: "secret", Action: "ask", Reason: "reads need a yes"},
		{Tool: "read_*", Action: "ask", Reason: "reads need a yes"},
		{Tool: "write_file", Action: "ask", Reason: "reads need a yes"},
		{Tool: "shell", Arguments: `rm\s+-rf`, Action: "deny"},
	}})
	require.NoError(t, err)
	return &approvalWorld{c: c, mgr: mgr}, func() { _ = root.Dispose() }
}

func (w *approvalWorld) agent(t require.TestingT, replies ...scripted.Reply) *agentloop.Agent {
	prov, err := scripted.New(scripted.Config{Script: replies})
	require.NoError(t, err)
	return agentloop.New(w.c, agentloop.Config{}, agentloop.WithProvider(prov),
		agentloop.WithTools(echoTool("read_file"), echoTool("write_file"), echoTool("shell"), echoTool("list_dir")))
}

// Answers to an asked call in approvedLog.
const (
	deny   = "deny"
	allow  = "allow"
	always = "always" // allow, scope session
)

// approvedLog runs one turn whose calls are kinds (a: asked, d: denied by
// the policy, r: run), decides the asked ones (answers[i] for the i-th in
// order of decision, given in order perm; a call an earlier "always"
// decided is skipped) and resumes it to completion; then a second turn
// reads once more, which an "always" of the first decides (and which is
// allowed otherwise).
func approvedLog(t require.TestingT, kinds string, answers []string, perm []int) []session.Record {
	ctx := context.Background()
	w, dispose := newApprovalWorld(t)
	defer dispose()
	var calls []scripted.ToolCall
	for i, k := range kinds {
		switch k {
		case 'a':
			calls = append(calls, scripted.ToolCall{Name: "read_file", Arguments: map[string]any{"path": fmt.Sprint(i)}})
		case 'd':
			calls = append(calls, scripted.ToolCall{Name: "shell", Arguments: map[string]any{"cmd": "rm -rf /"}})
		default:
			calls = append(calls, scripted.ToolCall{Name: "list_dir", Arguments: map[string]any{"path": fmt.Sprint(i)}})
		}
	}
	sess, err := w.mgr.Create(ctx)
	require.NoError(t, err)
	a := w.agent(t, scripted.Reply{ToolCalls: calls}, scripted.Reply{Text: "done"},
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "read_file", Arguments: map[string]any{"path": "again"}}}}, scripted.Reply{Text: "done again"})
	res, err := a.Run(ctx, sess, "go")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	for n, i := range perm {
		id := res.Pending[i].Call.ID
		if session.Suspended(sess.Records()).Find(id).Decision != nil {
			continue
		}
		d := agentloop.Decision{Allow: answers[n] != deny, By: "ann", Reason: "because"}
		if answers[n] == always {
			d.Scope = session.ScopeSession
		}
		_, err := agentloop.Decide(ctx, sess, id, d)
		require.NoError(t, err)
	}
	res, err = a.Resume(ctx, sess)
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, res.Reason)
	res, err = a.Run(ctx, sess, "again")
	if errors.Is(err, agentloop.ErrSuspended) {
		_, err = agentloop.Decide(ctx, sess, res.Pending[0].Call.ID, agentloop.Decision{Allow: true, By: "ann"})
		require.NoError(t, err)
		res, err = a.Resume(ctx, sess)
	}
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, res.Reason)
	return sess.Records()
}

func verifySpecs(t require.TestingT, specs []spec) []invariants.Violation {
	data, err := jsonlOf("s1", renumber(specs))
	require.NoError(t, err)
	rep, err := invariants.Verify(bytes.NewReader(data))
	require.NoError(t, err)
	return rep.Violations
}

// caught reports whether the log specs is refused: its records cannot
// be written (a decision citing a later seq is bad data), or it breaks
// approval-before-run.
func caught(t require.TestingT, specs []spec) bool {
	data, err := jsonlOf("s1", renumber(specs))
	if errors.Is(err, session.ErrInvalidPayload) {
		return true
	}
	require.NoError(t, err)
	rep, err := invariants.Verify(bytes.NewReader(data))
	require.NoError(t, err)
	return hasRule(rep.Violations, invariants.RuleApprovalBeforeRun)
}

func hasRule(vs []invariants.Violation, rule string) bool {
	for _, v := range vs {
		if v.Rule == rule {
			return true
		}
	}
	return false
}

func isApproval(typ string) bool {
	return typ == session.TypeApprovalRequest || typ == session.TypeApprovalDecision
}

// TestPropertyDroppingOrMovingAnApprovalEventIsCaught: in logs the loop
// wrote under a policy (asked, denied and allowed calls, decisions in any
// order, "always for this session" among them, whose session-rule
// decisions the loop writes), dropping any approval/request or
// approval/decision, or moving one anywhere else in its step, breaks
// approval-before-run — but for decisions trading places with decisions,
// and anything with the step's step/usage, which commute.
func TestPropertyDroppingOrMovingAnApprovalEventIsCaught(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		kinds := rapid.StringMatching(`[adr]{0,3}a[adr]{0,2}`).Draw(rt, "kinds")
		asked := bytes.Count([]byte(kinds), []byte("a"))
		perm := rapid.Permutation(func() []int {
			p := make([]int, asked)
			for i := range p {
				p[i] = i
			}
			return p
		}()).Draw(rt, "order")
		answers := rapid.SliceOfN(rapid.SampledFrom([]string{deny, allow, always}), asked, asked).Draw(rt, "answers")
		specs := specsOf(approvedLog(rt, kinds, answers, perm))
		require.Empty(rt, verifySpecs(rt, specs), "the log as written is valid")

		for i, s := range specs {
			if !isApproval(s.ev.Type) {
				continue
			}
			dropped := append(append([]spec(nil), specs[:i]...), specs[i+1:]...)
			assert.True(rt, caught(rt, dropped), "dropping seq %d %s is caught", s.seq, s.ev.Type)
			// Moved to position j of the log without it, inside its step
			// (between its step/start and step/end, exclusive).
			lo, hi := i, i
			for specs[lo].ev.Type != session.TypeStepStart {
				lo--
			}
			for specs[hi].ev.Type != session.TypeStepEnd {
				hi++
			}
			for j := lo + 1; j < hi; j++ {
				if j == i {
					continue
				}
				// A decision commutes with decisions; anything with the
				// step's step/usage, which no approval rule reads.
				a, b := min(i, j), max(i, j)
				commutes := true
				for k := a; k <= b && commutes; k++ {
					typ := specs[k].ev.Type
					commutes = k == i || typ == session.TypeStepUsage || typ == session.TypeApprovalDecision && s.ev.Type == typ
				}
				if commutes {
					continue
				}
				moved := append([]spec(nil), dropped...)
				moved = append(moved[:j], append([]spec{s}, moved[j:]...)...)
				assert.True(rt, caught(rt, moved), "moving seq %d %s to %d is caught", s.seq, s.ev.Type, j)
			}
		}
	})
}

// TestVerifyCatchesAToolRunWithoutItsDecision: forged logs where a tool
// ran without the decision its request, or its policy, required.
func TestVerifyCatchesAToolRunWithoutItsDecision(t *testing.T) {
	specs := specsOf(approvedLog(t, "a", []string{allow}, []int{0}))
	without := func(types ...string) []spec {
		var out []spec
		for _, s := range specs {
			drop := false
			for _, typ := range types {
				drop = drop || s.ev.Type == typ
			}
			if !drop {
				out = append(out, s)
			}
		}
		return out
	}
	denied := append([]spec(nil), specs...)
	d := find(denied, session.TypeApprovalDecision, 0)
	dec := dataOf[session.ApprovalDecision](denied[d])
	dec.Allow = false
	setData(&denied[d], dec)
	cases := []struct {
		name  string
		specs []spec
		want  string
	}{
		{"no decision", without(session.TypeApprovalDecision), "has no decision"},
		{"no request either", without(session.TypeApprovalDecision, session.TypeApprovalRequest), "asks about"},
		{"denied, ran anyway", denied, "which was denied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vs := verifySpecs(t, tc.specs)
			require.NotEmpty(t, vs)
			assert.Equal(t, invariants.RuleApprovalBeforeRun, vs[0].Rule)
			assert.Contains(t, vs[0].Message, tc.want)
		})
	}
}

// TestAToolStartWithoutDecisionIsRefusedAtAppend: live, in strict mode.
func TestAToolStartWithoutDecisionIsRefusedAtAppend(t *testing.T) {
	ctx := context.Background()
	w, dispose := newApprovalWorld(t)
	defer dispose()
	sess, err := w.mgr.Create(ctx)
	require.NoError(t, err)
	res, err := w.agent(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "read_file"}}}).Run(ctx, sess, "go")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	p := res.Pending[0]
	_, err = sess.Append(ctx, session.Event{Type: session.TypeToolStart, Turn: 1, Step: 1, Data: session.ToolStart{ID: p.Call.ID}})
	var ie *invariants.InvariantError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, invariants.RuleApprovalBeforeRun, ie.Violation.Rule)
	// A second request, and a decision twice, are refused too.
	_, err = sess.Append(ctx, session.Event{Type: session.TypeApprovalRequest, Turn: 1, Step: 1, Data: session.ApprovalRequest{ID: p.Call.ID}})
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Violation.Message, "second approval/request")
	dec := session.Event{Type: session.TypeApprovalDecision, Turn: 1, Step: 1, Data: session.ApprovalDecision{ID: p.Call.ID, Allow: true}}
	_, err = sess.Append(ctx, dec)
	require.NoError(t, err)
	_, err = sess.Append(ctx, dec)
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Violation.Message, "second approval/decision")
}

// alwaysLog is a log of the loop under the approvals plugin: turn 1 reads
// and gets "always for this session" (the decision at seq always); in
// turn 2 a read runs on it (its session-rule decision at seq byRule),
// while a write, asked for the same reason, and a read of a secret, asked
// by another rule, wait for and get a person's yes (at seqs write and
// secret). Forged decisions are refused at append on the way.
func alwaysLog(t *testing.T) (specs []spec, always, byRule, write, secret int) {
	ctx := context.Background()
	w, dispose := newApprovalWorld(t)
	defer dispose()
	sess, err := w.mgr.Create(ctx)
	require.NoError(t, err)
	read := func(p string) scripted.ToolCall {
		return scripted.ToolCall{Name: "read_file", Arguments: map[string]any{"path": p}}
	}
	a := w.agent(t, scripted.Reply{ToolCalls: []scripted.ToolCall{read("a")}}, scripted.Reply{Text: "done"},
		scripted.Reply{ToolCalls: []scripted.ToolCall{read("b"), {Name: "write_file"}, read("secret")}}, scripted.Reply{Text: "done"})
	res, err := a.Run(ctx, sess, "go")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	first, err := agentloop.Decide(ctx, sess, res.Pending[0].Call.ID, agentloop.Decision{Allow: true, By: "ann", Scope: session.ScopeSession})
	require.NoError(t, err)
	_, err = a.Resume(ctx, sess)
	require.NoError(t, err)

	res, err = a.Run(ctx, sess, "again")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	require.Len(t, res.Pending, 2, "another tool, and another rule, still ask")
	assert.Equal(t, "write_file", res.Pending[0].Call.Name)
	assert.JSONEq(t, `{"path":"secret"}`, res.Pending[1].Call.Arguments)
	for _, p := range res.Pending {
		forged := session.Event{Type: session.TypeApprovalDecision, Turn: 2, Step: 1, Data: session.ApprovalDecision{ID: p.Call.ID, Allow: true, By: session.SessionRuleBy, Cites: first.Seq()}}
		_, err = sess.Append(ctx, forged)
		var ie *invariants.InvariantError
		require.ErrorAs(t, err, &ie, p.Call.Arguments)
		assert.Contains(t, ie.Violation.Message, "does not cover it")
		_, err = agentloop.Decide(ctx, sess, p.Call.ID, agentloop.Decision{Allow: true, By: "bob"})
		require.NoError(t, err)
	}
	_, err = a.Resume(ctx, sess)
	require.NoError(t, err)

	specs = specsOf(sess.Records())
	always, byRule, write, secret = find(specs, session.TypeApprovalDecision, 0), find(specs, session.TypeApprovalDecision, 1), find(specs, session.TypeApprovalDecision, 2), find(specs, session.TypeApprovalDecision, 3)
	require.Equal(t, session.SessionRuleBy, dataOf[session.ApprovalDecision](specs[byRule]).By)
	return specs, always, byRule, write, secret
}

// TestVerifyAcceptsSessionRuleDecisionsAndCatchesForgedOnes: the
// session-rule decisions the loop writes verify; forged ones — citing
// nothing or no session-scoped allow, citing an allow of another tool or
// of another rule, denying, given by a person — and a session-scoped
// denial fail approval-before-run.
func TestVerifyAcceptsSessionRuleDecisionsAndCatchesForgedOnes(t *testing.T) {
	specs, always, byRule, write, secret := alwaysLog(t)
	require.Empty(t, verifySpecs(t, specs))
	alwaysSeq := specs[always].seq
	edit := func(i int, f func(*session.ApprovalDecision)) []spec {
		out := append([]spec(nil), specs...)
		d := dataOf[session.ApprovalDecision](out[i])
		f(&d)
		setData(&out[i], d)
		return out
	}
	bySessionRule := func(d *session.ApprovalDecision) { d.By, d.Cites = session.SessionRuleBy, alwaysSeq }
	cases := []struct {
		name  string
		specs []spec
		want  string
	}{
		{"citing nothing", edit(byRule, func(d *session.ApprovalDecision) { d.Cites = 0 }), "citing the session-scoped allow"},
		{"denying", edit(byRule, func(d *session.ApprovalDecision) { d.Allow = false }), "must allow"},
		{"of scope session", edit(byRule, func(d *session.ApprovalDecision) { d.Scope = session.ScopeSession }), "with scope call"},
		{"citing a call-scoped allow", edit(always, func(d *session.ApprovalDecision) { d.Scope = session.ScopeCall }), "no session-scoped allowing decision"},
		{"citing a request", edit(byRule, func(d *session.ApprovalDecision) { d.Cites = specs[always-1].seq }), "no session-scoped allowing decision"},
		{"citing an allow of another tool", edit(write, bySessionRule), `it allowed tool "read_file", not "write_file"`},
		{"citing an allow of another rule", edit(secret, bySessionRule), "another rule of the policy asked"},
		{"a person citing", edit(write, func(d *session.ApprovalDecision) { d.Cites = alwaysSeq }), "only a decision by session-rule cites one"},
		{"a session-scoped denial", edit(always, func(d *session.ApprovalDecision) { d.Allow = false }), "denies with scope session"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vs := verifySpecs(t, tc.specs)
			require.NotEmpty(t, vs)
			assert.Equal(t, invariants.RuleApprovalBeforeRun, vs[0].Rule)
			assert.Contains(t, vs[0].Message, tc.want)
		})
	}
}

// TestVerifyChecksTheReasonOfADenial: an APPROVAL_DENIED result states
// who denied the call and why, as its decision does: a result whose
// message was edited, or a decision whose reason was, is caught.
func TestVerifyChecksTheReasonOfADenial(t *testing.T) {
	specs := specsOf(approvedLog(t, "a", []string{deny}, []int{0}))
	require.Empty(t, verifySpecs(t, specs))
	res := slices.IndexFunc(specs, func(s spec) bool {
		if s.ev.Type != session.TypeToolResult {
			return false
		}
		r := dataOf[session.ToolResult](s)
		return r.Error != nil && r.Error.Code == session.CodeApprovalDenied
	})
	require.GreaterOrEqual(t, res, 0)
	r := dataOf[session.ToolResult](specs[res])
	require.Equal(t, "ann denied this call: because", r.Error.Message)

	editedResult := slices.Clone(specs)
	r.Error.Message = "ann denied this call: it was Tuesday"
	setData(&editedResult[res], r)
	editedDecision := slices.Clone(specs)
	dec := find(editedDecision, session.TypeApprovalDecision, 0)
	d := dataOf[session.ApprovalDecision](editedDecision[dec])
	d.Reason = "a reason the model never saw"
	setData(&editedDecision[dec], d)

	for name, specs := range map[string][]spec{"result edited": editedResult, "decision edited": editedDecision} {
		t.Run(name, func(t *testing.T) {
			vs := verifySpecs(t, specs)
			require.NotEmpty(t, vs)
			assert.Equal(t, invariants.RuleApprovalBeforeRun, vs[0].Rule)
			assert.Contains(t, vs[0].Message, "does not say who denied it and why")
		})
	}
}
