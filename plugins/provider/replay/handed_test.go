package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// TestRunFollowsATurnAnotherProcessResumedWithoutAHeader: a process dies
// right after a session-scoped allow decided its step's call; the next
// process, whose agent allows one step, resumes the step, runs the call
// and ends the turn at its limit, starting no step, so it logs no
// header. The recording shows the turn's first step run by the instance
// of the turn before (no header), which ran two steps there, and the
// turn ended at a limit of one: the rerun hands the turn over where the
// recording's step was suspended, and follows it event for event (rapid
// seed 25679414).
func TestRunFollowsATurnAnotherProcessResumedWithoutAHeader(t *testing.T) {
	ctx := context.Background()
	beta := effectTool{name: "beta", run: func(context.Context) (string, error) { return "done", nil }}
	call := scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "beta", Arguments: map[string]any{"x": 1}}}}
	w := newDyingWorld(t, call, scripted.Reply{Text: "ok"}, call)
	_, err := w.w.c.Plugin(approvals.Plugin, &approvals.Config{Rules: []approvals.Rule{{Tool: "beta", Action: "ask", Reason: "beta needs a yes"}}})
	require.NoError(t, err)
	first := agentloop.New(w.w.c, agentloop.Config{Model: "m1", MaxSteps: 2}, agentloop.WithProvider(w.prov), agentloop.WithTools(beta))
	t.Cleanup(func() { _ = first.Close() })

	// Turn 1: beta asked, allowed for the session, two steps.
	_, err = first.Run(ctx, w.sess, "go")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	s := session.Suspended(w.sess.Records())
	require.NotNil(t, s)
	_, err = agentloop.Decide(ctx, w.sess, s.Calls[0].Call.ID, agentloop.Decision{Allow: true, By: "ann", Scope: session.ScopeSession})
	require.NoError(t, err)
	_, err = first.Resume(ctx, w.sess)
	require.NoError(t, err)
	// Turn 2: the same instance; its process dies once the rule allowed beta.
	w.dies(session.TypeToolStart, func() error { _, err := first.Run(ctx, w.sess, "again"); return err })
	require.NotNil(t, session.Suspended(w.sess.Records()), "dead with its call decided")
	next := agentloop.New(w.w.c, agentloop.Config{Model: "m1", MaxSteps: 1}, agentloop.WithProvider(w.prov), agentloop.WithTools(beta))
	t.Cleanup(func() { _ = next.Close() })
	res, err := next.Resume(ctx, w.sess)
	require.NoError(t, err)
	require.Equal(t, session.ReasonMaxSteps, res.Reason)
	recs := w.sess.Records()
	headers := ofTypeData[session.RequestHeader](t, recs, session.TypeRequestHeader)
	require.Len(t, headers, 1, "one instance logged a header: the first")

	root := quietRoot()
	defer root.Dispose()
	rr := rerunIdentically(t, root.Context(), recs)
	sameEvents(t, recs, rr.Session.Records())
}
