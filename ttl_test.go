package vigil_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// calcCall is a model reply calling calc once.
var calcCall = scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "6*7"}}}}

// decisionsOf returns session id's approval/decision data.
func decisionsOf(t *testing.T, rt *vigil.Runtime, id string) []session.ApprovalDecision {
	t.Helper()
	log, err := rt.Session(context.Background(), id)
	require.NoError(t, err)
	var out []session.ApprovalDecision
	for _, r := range log.Records {
		if r.Type() == session.TypeApprovalDecision {
			d, err := session.DecodeData[session.ApprovalDecision](r)
			require.NoError(t, err)
			out = append(out, d)
		}
	}
	return out
}

// waitIdle waits until session id's last turn has ended and returns its
// turn/end.
func waitIdle(t *testing.T, rt *vigil.Runtime, id string) session.TurnEnd {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		log, err := rt.Session(context.Background(), id)
		require.NoError(t, err)
		if n := len(log.Records); n > 0 && log.Records[n-1].Type() == session.TypeTurnEnd {
			end, err := session.DecodeData[session.TurnEnd](log.Records[n-1])
			require.NoError(t, err)
			return end
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("session %s did not end its turn", id)
	return session.TurnEnd{}
}

// With an approval TTL, a call nobody decides is denied once it has
// waited that long, by the TTL, with a reason saying so; the turn goes
// on and the log verifies. A worker that starts after the call asked
// denies it too (it looks at every session as it starts).
func TestAnApprovalTTLDeniesACallThatWaitsTooLong(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "the worker suspended it"
		if late {
			name = "a worker started later"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "sessions")
			const ttl = 300 * time.Millisecond
			rt := open(t, askingAgent(dir, calcCall, scripted.Reply{Text: "Denied, then."}))
			id, err := rt.NewSession(ctx)
			require.NoError(t, err)
			if late {
				_, err := rt.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "6 times 7?"})
				require.ErrorIs(t, err, vigil.ErrSuspended)
			} else {
				_, _, err := rt.QueueTurn(ctx, id, "6 times 7?")
				require.NoError(t, err)
			}
			wctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- rt.Work(wctx, vigil.WorkOptions{Worker: "w", ApprovalTTL: ttl}) }()
			t.Cleanup(func() { stop(); require.NoError(t, <-done) })

			end := waitIdle(t, rt, id)
			// The TTL counts from the request's logged time: the decision
			// is logged that long after it or later (both in the log's
			// milliseconds, the request's read as the watch reads it).
			log, err := rt.Session(ctx, id)
			require.NoError(t, err)
			var asked, decided time.Time
			for _, r := range log.Records {
				switch r.Type() {
				case session.TypeApprovalRequest:
					asked = r.Time()
				case session.TypeApprovalDecision:
					decided = r.Time()
				}
			}
			assert.GreaterOrEqual(t, decided.Sub(asked), ttl, "not before the TTL")
			assert.Equal(t, session.ReasonCompleted, end.Reason)
			ds := decisionsOf(t, rt, id)
			require.Len(t, ds, 1)
			assert.False(t, ds[0].Allow)
			assert.Equal(t, vigil.TTLDecider, ds[0].By)
			assert.Contains(t, ds[0].Reason, "no decision within 300ms")
			verified(t, log)
		})
	}
}

// A call decided in time is not denied by the TTL.
func TestAnApprovalTTLLeavesADecidedCallAlone(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sessions")
	const ttl = 400 * time.Millisecond
	rt := open(t, askingAgent(dir, calcCall, scripted.Reply{Text: "42."}))
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Work(wctx, vigil.WorkOptions{Worker: "w", ApprovalTTL: ttl}) }()
	t.Cleanup(func() { stop(); require.NoError(t, <-done) })
	id, err := rt.NewSession(ctx)
	require.NoError(t, err)
	_, _, err = rt.QueueTurn(ctx, id, "6 times 7?")
	require.NoError(t, err)
	var call string
	for call == "" {
		p, err := rt.Pending(ctx, id)
		require.NoError(t, err)
		if p != nil {
			call = p.Calls[0].Call.ID
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, _, err = rt.QueueDecision(ctx, id, call, vigil.Decision{Allow: true, By: "ana"})
	require.NoError(t, err)
	waitIdle(t, rt, id)
	time.Sleep(2 * ttl)
	ds := decisionsOf(t, rt, id)
	require.Len(t, ds, 1)
	assert.Equal(t, "ana", ds[0].By)
}

// Abandon denies a suspended turn's undecided calls, reason cancelled,
// and ends the turn aborted; the log verifies.
func TestAbandonEndsASuspendedTurnAborted(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sessions")
	rt := open(t, askingAgent(dir, twoCalcs, scripted.Reply{Text: "never asked"}))
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "compute"})
	require.ErrorIs(t, err, vigil.ErrSuspended)
	id := res.Session
	_, err = rt.Decide(ctx, vigil.DecideOptions{Session: id, Call: res.Pending[0].Call.ID, Decision: vigil.Decision{Allow: true, By: "ana"}})
	require.NoError(t, err)

	got, err := rt.Abandon(ctx, id, "bo")
	require.ErrorIs(t, err, vigil.ErrAbandoned)
	require.NotNil(t, got)
	assert.Equal(t, session.ReasonAborted, got.Reason)
	ds := decisionsOf(t, rt, id)
	require.Len(t, ds, 2)
	assert.Equal(t, session.ApprovalDecision{ID: res.Pending[1].Call.ID, By: "bo", Reason: vigil.ReasonCancelled}, ds[1])
	log, err := rt.Session(ctx, id)
	require.NoError(t, err)
	verified(t, log)
	_, err = rt.Abandon(ctx, id, "bo")
	require.ErrorIs(t, err, session.ErrNotSuspended)
}
