package invariants_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
// invariants plugin (strict): read_* asks, shell with rm -rf is denied,
// the rest is allowed.
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
		{Tool: "read_*", Action: "ask", Reason: "reads need a yes"},
		{Tool: "shell", Arguments: `rm\s+-rf`, Action: "deny"},
	}})
	require.NoError(t, err)
	return &approvalWorld{c: c, mgr: mgr}, func() { _ = root.Dispose() }
}

func (w *approvalWorld) agent(t require.TestingT, replies ...scripted.Reply) *agentloop.Agent {
	prov, err := scripted.New(scripted.Config{Script: replies})
	require.NoError(t, err)
	return agentloop.New(w.c, agentloop.Config{}, agentloop.WithProvider(prov),
		agentloop.WithTools(echoTool("read_file"), echoTool("shell"), echoTool("list_dir")))
}

// approvedLog runs one turn whose calls are kinds (a: asked, d: denied by
// the policy, r: run), decides the asked ones (allow[i] for the i-th in
// order of decision, given in order perm) and resumes it to completion.
func approvedLog(t require.TestingT, kinds string, allow []bool, perm []int) []*session.Record {
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
	a := w.agent(t, scripted.Reply{ToolCalls: calls}, scripted.Reply{Text: "done"})
	res, err := a.Run(ctx, sess, "go")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	for n, i := range perm {
		_, err := agentloop.Decide(ctx, sess, res.Pending[i].Call.ID, agentloop.Decision{Allow: allow[n], By: "ann", Reason: "because"})
		require.NoError(t, err)
	}
	res, err = a.Resume(ctx, sess)
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
// order), dropping any approval/request or approval/decision, or moving
// one anywhere else in its step, breaks approval-before-run — but for
// decisions trading places with decisions, which commute.
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
		allow := rapid.SliceOfN(rapid.Bool(), asked, asked).Draw(rt, "allow")
		specs := specsOf(approvedLog(rt, kinds, allow, perm))
		require.Empty(rt, verifySpecs(rt, specs), "the log as written is valid")

		step := [2]int{-1, -1} // the first step's step/start and step/end
		for i, s := range specs {
			if s.ev.Type == session.TypeStepStart && step[0] < 0 {
				step[0] = i
			}
			if s.ev.Type == session.TypeStepEnd && step[1] < 0 {
				step[1] = i
			}
		}
		for i, s := range specs {
			if !isApproval(s.ev.Type) {
				continue
			}
			dropped := append(append([]spec(nil), specs[:i]...), specs[i+1:]...)
			assert.True(rt, hasRule(verifySpecs(rt, dropped), invariants.RuleApprovalBeforeRun), "dropping seq %d %s is caught", s.seq, s.ev.Type)
			// Moved to position j of the log without it, inside the step.
			for j := step[0] + 1; j < step[1]; j++ {
				if j == i {
					continue
				}
				lo, hi := min(i, j), max(i, j)
				commutes := s.ev.Type == session.TypeApprovalDecision
				for k := lo; k <= hi && commutes; k++ {
					commutes = k == i || specs[k].ev.Type == session.TypeApprovalDecision
				}
				if commutes {
					continue
				}
				moved := append([]spec(nil), dropped...)
				moved = append(moved[:j], append([]spec{s}, moved[j:]...)...)
				assert.True(rt, hasRule(verifySpecs(rt, moved), invariants.RuleApprovalBeforeRun), "moving seq %d %s to %d is caught", s.seq, s.ev.Type, j)
			}
		}
	})
}

// TestVerifyCatchesAToolRunWithoutItsDecision: forged logs where a tool
// ran without the decision its request, or its policy, required.
func TestVerifyCatchesAToolRunWithoutItsDecision(t *testing.T) {
	specs := specsOf(approvedLog(t, "a", []bool{true}, []int{0}))
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

// TestADecisionCitesOnlyASessionScopedAllow: "always for this session"
// is logged as an allowing decision of scope session; a later decision
// resting on it cites it, and nothing else.
func TestADecisionCitesOnlyASessionScopedAllow(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		first     session.ApprovalDecision
		violation bool
	}{
		{"session scope", session.ApprovalDecision{Allow: true, Scope: session.ScopeSession}, false},
		{"call scope", session.ApprovalDecision{Allow: true}, true},
		{"a session-scoped denial", session.ApprovalDecision{Allow: false, Scope: session.ScopeSession}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, dispose := newApprovalWorld(t)
			defer dispose()
			sess, err := w.mgr.Create(ctx)
			require.NoError(t, err)
			a := w.agent(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "read_file"}}}, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "read_file"}}})
			res, err := a.Run(ctx, sess, "go")
			require.ErrorIs(t, err, agentloop.ErrSuspended)
			first, err := agentloop.Decide(ctx, sess, res.Pending[0].Call.ID, agentloop.Decision{Allow: tc.first.Allow, Scope: tc.first.Scope})
			require.NoError(t, err)
			res, err = a.Resume(ctx, sess)
			require.ErrorIs(t, err, agentloop.ErrSuspended)
			ev, err := session.CheckDecision(sess.Records(), res.Pending[0].Call.ID, session.ApprovalDecision{Allow: true, By: "session-rule", Cites: first.Seq()})
			require.NoError(t, err)
			_, err = sess.Append(ctx, ev)
			if !tc.violation {
				require.NoError(t, err)
				return
			}
			var ie *invariants.InvariantError
			require.ErrorAs(t, err, &ie)
			assert.Contains(t, ie.Violation.Message, "no session-scoped allowing decision")
		})
	}
}
