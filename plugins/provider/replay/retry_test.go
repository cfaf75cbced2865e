package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// effectTool is a tool with an effect; idempotent ones declare it.
type effectTool struct {
	name       string
	idempotent bool
	run        func(ctx context.Context) (string, error)
}

func (e effectTool) Spec() session.ToolSpec {
	return session.ToolSpec{Name: e.name, Description: e.name, Parameters: json.RawMessage(`{"type":"object"}`), Idempotent: e.idempotent}
}

func (e effectTool) Execute(ctx context.Context, _ json.RawMessage) (string, error) {
	return e.run(ctx)
}

// TestRunReplaysRetriesAndReconciliations: a log whose calls a crash
// left unknown, retried by continuations (one killed during its retry,
// its own continuation retrying again, one cancelled during its retry)
// and reconciled by a person between turns, verifies and runs again
// identically: each retry answered with the outcome its continuation
// logged, the person's tool/reconcile copied.
func TestRunReplaysRetriesAndReconciliations(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, memory.New(), t.TempDir())
	var cancelTurn context.CancelFunc
	pay := effectTool{name: "pay", idempotent: true, run: func(ctx context.Context) (string, error) {
		if cancelTurn != nil {
			cancelTurn() // the user interrupts the continuation while it retries
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "paid " + agentloop.IdempotencyKey(ctx), nil
	}}
	mail := effectTool{name: "mail", run: func(context.Context) (string, error) { return "sent", nil }}
	prov, err := scripted.New(scripted.Config{Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "pay", Arguments: map[string]any{"amount": 1}}}},
		{ToolCalls: []scripted.ToolCall{{Name: "mail", Arguments: map[string]any{"to": "ann"}}}},
		{Text: "done"},
		{ToolCalls: []scripted.ToolCall{{Name: "pay", Arguments: map[string]any{"amount": 2}}}},
	}})
	require.NoError(t, err)
	sess, err := w.mgr.Create(ctx)
	require.NoError(t, err)
	agent := func() *agentloop.Agent {
		a := agentloop.New(w.c, agentloop.Config{System: "s", Model: "m1"}, agentloop.WithProvider(prov), agentloop.WithTools(pay, mail))
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	// dies runs turn in a process that dies when it would log a record
	// of type typ, and closes the turn as repair does.
	dies := func(typ string, turn func(a *agentloop.Agent) error) {
		t.Helper()
		dead := false
		undo := bus.Veto.On(w.c, func(_ context.Context, d bus.Dispatch) error {
			if cm, ok := d.Payload.(live.Commit); ok && cm.Session() == sess && (dead || cm.Record().Type() == typ) {
				dead = true
				return errors.New("the process died")
			}
			return nil
		})
		require.Error(t, turn(agent()))
		undo()
		require.True(t, dead)
		for _, ev := range session.Closers(sess.Records()) {
			_, err := sess.Append(ctx, ev)
			require.NoError(t, err)
		}
	}
	run := func(prompt string) func(a *agentloop.Agent) error {
		return func(a *agentloop.Agent) error { _, err := a.Run(ctx, sess, prompt); return err }
	}
	cont := func(a *agentloop.Agent) error { _, err := a.Continue(ctx, sess); return err }

	dies(session.TypeToolResult, run("pay 1")) // turn 1: pay's outcome unknown
	dies(session.TypeToolReconcile, cont)      // turn 2: killed while it retries
	dies(session.TypeToolResult, cont)         // turn 3: retries pay, then mail's outcome unknown
	mailCall := ofTypeData[session.ToolCall](t, sess.Records(), session.TypeToolCall)[1].ID
	var mailResult int64 = -1
	for _, r := range sess.Records() {
		if res, err := session.DecodeData[session.ToolResult](r); err == nil && r.Type() == session.TypeToolResult && res.ID == mailCall {
			mailResult = r.Seq()
		}
	}
	_, err = sess.Append(ctx, session.Event{Type: session.TypeToolReconcile, Sources: []int64{mailResult},
		Data: session.ToolReconcile{ID: mailCall, Name: "mail", Content: "the outbox has it", By: "ann"}})
	require.NoError(t, err)
	_, err = agent().Continue(ctx, sess) // turn 4: nothing to retry
	require.NoError(t, err)
	dies(session.TypeToolResult, run("pay 2")) // turn 5: pay's outcome unknown
	tctx, cancel := context.WithCancel(ctx)
	cancelTurn = cancel
	res, err := agent().Continue(tctx, sess) // turn 6: cancelled while it retries
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, session.ReasonAborted, res.Reason)
	cancelTurn = nil

	recs := sess.Records()
	assert.Len(t, ofTypeData[session.ToolRetry](t, recs, session.TypeToolRetry), 3, "turns 2, 3 and 6")
	require.Len(t, ofTypeData[session.ToolReconcile](t, recs, session.TypeToolReconcile), 2, "turn 3's and ann's")

	rep, err := invariants.Verify(bytes.NewReader(encodeRecords(recs)))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)

	again := newWorld(t, memory.New(), t.TempDir())
	rr, err := replay.Run(ctx, again.c, again.mgr, recs)
	require.NoError(t, err)
	for _, err := range rr.Errors {
		assert.NotErrorIs(t, err, replay.ErrDiverged)
	}
	assert.True(t, rr.Identical(), "%+v", rr.Steps)
	got := rr.Session.Records()
	require.Len(t, got, len(recs))
	for i, r := range recs {
		assert.Equal(t, r.Type(), got[i].Type(), "seq %d", i)
		assert.Equal(t, string(r.Data()), string(got[i].Data()), "seq %d", i)
		assert.Equal(t, r.Sources(), got[i].Sources(), "seq %d", i)
	}
}

// ofTypeData decodes the data of the records of type typ.
func ofTypeData[T any](t *testing.T, recs []session.Record, typ string) []T {
	t.Helper()
	var out []T
	for _, r := range recs {
		if r.Type() == typ {
			v, err := session.DecodeData[T](r)
			require.NoError(t, err)
			out = append(out, v)
		}
	}
	return out
}

// TestRunRetriesWhatTheRecordedContinuationRetried: which unknown calls a
// continuation runs again depends on the tools it is offered when it
// starts, which no record logs (the process may die before its first
// step's request/header, and that header may differ). The rerun runs
// again exactly the calls the recording shows retried: none when the
// tool was gone by then though the last header offers it (rapid seed
// 12659156690246245004), and the call when it was back though the last
// header does not offer it.
func TestRunRetriesWhatTheRecordedContinuationRetried(t *testing.T) {
	pay := effectTool{name: "pay", idempotent: true, run: func(context.Context) (string, error) { return "paid", nil }}
	for _, tc := range []struct {
		name string
		// turns record the session after turn 1, whose process died
		// while pay ran.
		turns   func(w *dyingWorld)
		retries int
	}{
		{"the tool gone, and the process dead before the first request", func(w *dyingWorld) {
			w.dies(session.TypeRequestHeader, w.cont()) // turn 2: no tools, no retry
		}, 0},
		{"the tool back after a continuation without it", func(w *dyingWorld) {
			w.dies(session.TypeStepEnd, w.cont())          // turn 2: no tools, no retry, one step
			w.dies(session.TypeToolReconcile, w.cont(pay)) // turn 3: pay again, retried
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := newDyingWorld(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "pay", Arguments: map[string]any{"amount": 1}}}}, scripted.Reply{Text: "thinking"})
			w.dies(session.TypeToolResult, w.run("pay 1", pay)) // turn 1: pay's outcome unknown
			tc.turns(w)
			recs := w.sess.Records()
			require.Len(t, ofTypeData[session.ToolRetry](t, recs, session.TypeToolRetry), tc.retries)

			rep, err := invariants.Verify(bytes.NewReader(encodeRecords(recs)))
			require.NoError(t, err)
			require.Empty(t, rep.Violations)
			again := newWorld(t, memory.New(), t.TempDir())
			rr, err := replay.Run(ctx, again.c, again.mgr, recs)
			require.NoError(t, err)
			for _, err := range rr.Errors {
				require.NotErrorIs(t, err, replay.ErrDiverged)
			}
			require.True(t, rr.Identical(), "%+v", rr.Steps)
			got := rr.Session.Records()
			require.Len(t, got, len(recs))
			for i, r := range recs {
				assert.Equal(t, r.Type(), got[i].Type(), "seq %d", i)
				assert.Equal(t, string(r.Data()), string(got[i].Data()), "seq %d", i)
			}
		})
	}
}

// dyingWorld records a session whose turns run in processes that die.
type dyingWorld struct {
	t    *testing.T
	w    *world
	sess *live.Session
	prov agentloop.Provider
}

func newDyingWorld(t *testing.T, script ...scripted.Reply) *dyingWorld {
	w := newWorld(t, memory.New(), t.TempDir())
	prov, err := scripted.New(scripted.Config{Script: script})
	require.NoError(t, err)
	sess, err := w.mgr.Create(context.Background())
	require.NoError(t, err)
	return &dyingWorld{t: t, w: w, sess: sess, prov: prov}
}

func (d *dyingWorld) agent(tools ...agentloop.Tool) *agentloop.Agent {
	a := agentloop.New(d.w.c, agentloop.Config{Model: "m1"}, agentloop.WithProvider(d.prov), agentloop.WithTools(tools...))
	d.t.Cleanup(func() { _ = a.Close() })
	return a
}

func (d *dyingWorld) run(prompt string, tools ...agentloop.Tool) func() error {
	return func() error { _, err := d.agent(tools...).Run(context.Background(), d.sess, prompt); return err }
}

func (d *dyingWorld) cont(tools ...agentloop.Tool) func() error {
	return func() error { _, err := d.agent(tools...).Continue(context.Background(), d.sess); return err }
}

// dies runs turn in a process that dies when it would log a record of
// type typ, and closes the turn as repair does. A turn that logs no such
// record ends the way it ends.
func (d *dyingWorld) dies(typ string, turn func() error) {
	d.t.Helper()
	dead := false
	undo := bus.Veto.On(d.w.c, func(_ context.Context, dp bus.Dispatch) error {
		if cm, ok := dp.Payload.(live.Commit); ok && cm.Session() == d.sess && (dead || cm.Record().Type() == typ) {
			dead = true
			return errors.New("the process died")
		}
		return nil
	})
	err := turn()
	undo()
	if !dead {
		require.NoError(d.t, err)
		return
	}
	for _, ev := range session.Closers(d.sess.Records()) {
		_, err := d.sess.Append(context.Background(), ev)
		require.NoError(d.t, err)
	}
}
