package vigil_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// crashedCharge writes, through rt, a session whose charge call started
// and never answered: a process that died while the tool ran. The next
// open repairs it to TOOL_OUTCOME_UNKNOWN. It returns the session id and
// the call's id.
func crashedCharge(t *testing.T, rt *vigil.Runtime) (string, string) {
	t.Helper()
	ctx := context.Background()
	mgr, err := rt.Manager()
	require.NoError(t, err)
	s, err := mgr.Create(ctx)
	require.NoError(t, err)
	call := session.ToolCall{ID: "call_1_1_0", Name: "charge", Arguments: "{}"}
	for _, ev := range sessiontest.CrashedCall("charge it", call) {
		_, err = s.Append(ctx, ev)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close(ctx))
	return s.ID(), call.ID
}

// Reconcile logs a person's outcome of an unknown call, once, durable,
// attributed to them; the model's next request shows it after the
// unknown result, and the log verifies.
func TestReconcileLogsTheOutcomeTheModelIsShownNext(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	rt := open(t, chargeAgent(sessions, chargeConfig{File: filepath.Join(dir, "effects")}, false, scripted.Reply{Text: "Refund noted."}))
	id, call := crashedCharge(t, rt)

	// Text a person pastes may be any bytes: held as valid UTF-8.
	err := rt.Reconcile(ctx, id, call, vigil.Reconciliation{Result: "charged \xff\x00 <ok>", By: "alice"})
	require.NoError(t, err)
	unknown, err := rt.Unknown(ctx, id)
	require.NoError(t, err)
	assert.Empty(t, unknown)

	log, err := rt.Session(ctx, id)
	require.NoError(t, err)
	last := log.Records[len(log.Records)-1]
	require.Equal(t, session.TypeToolReconcile, last.Type())
	rec, err := session.DecodeData[session.ToolReconcile](last)
	require.NoError(t, err)
	assert.Equal(t, session.ToolReconcile{ID: call, Name: "charge", Content: "charged \uFFFD\x00 <ok>", By: "alice"}, rec)

	res, err := rt.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "was it charged?"})
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	log, err = rt.Session(ctx, id)
	require.NoError(t, err)
	msgs, err := session.DeriveMessages(log.Records)
	require.NoError(t, err)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	assert.Equal(t, []string{"user", "assistant", "tool", "user", "user", "assistant"}, roles)
	assert.Contains(t, msgs[2].Content, session.CodeToolOutcomeUnknown, "the unknown result stays as it was")
	assert.Equal(t, session.ReconcileMessage(rec), msgs[3].Content)
	verifyStored(t, sessions, id)
}

// Reconcile refuses, logging nothing, what it may not settle.
func TestReconcileRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sessions, file := filepath.Join(dir, "sessions"), filepath.Join(dir, "effects")
	rt := open(t, chargeAgent(sessions, chargeConfig{File: file}, false, chargeOnce, scripted.Reply{Text: "Charged."}))
	id, call := crashedCharge(t, rt)
	require.NoError(t, rt.Reconcile(ctx, id, call, vigil.Reconciliation{Failed: "card declined", By: "alice"}))
	done, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "charge it"})
	require.NoError(t, err)

	asker := open(t, chargeAgent(sessions, chargeConfig{File: file}, true, chargeOnce))
	suspended, _ := crashedCharge(t, asker)
	_, err = asker.Turn(ctx, vigil.TurnOptions{Session: suspended, Prompt: "charge again"})
	require.ErrorIs(t, err, vigil.ErrSuspended)

	for _, tc := range []struct {
		name, id, call string
		want           error
	}{
		{"no session id", "", call, vigil.ErrNotFound},
		{"unknown session", "nope", call, vigil.ErrNotFound},
		{"unknown call", id, "call_9", session.ErrUnknownCall},
		{"reconciled already", id, call, session.ErrAlreadyReconciled},
		{"a known result", done.Session, "call_1_1_0", session.ErrOutcomeKnown},
		{"an open turn", suspended, "call_1_1_0", session.ErrOpenTurn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before int
			if tc.id != "" && tc.id != "nope" {
				log, err := rt.Session(ctx, tc.id)
				require.NoError(t, err)
				before = len(log.Records)
			}
			err := rt.Reconcile(ctx, tc.id, tc.call, vigil.Reconciliation{Result: "x", By: "bob"})
			require.ErrorIs(t, err, tc.want)
			if before > 0 {
				log, err := rt.Session(ctx, tc.id)
				require.NoError(t, err)
				assert.Len(t, log.Records, before, "nothing logged")
			}
		})
	}
	err = rt.Reconcile(ctx, id, call, vigil.Reconciliation{Result: "x", By: "bob"})
	assert.Contains(t, err.Error(), "alice", "the loser is told who reconciled it")
}

// Two reconcilers racing on one call log one reconcile: the other is
// told it was reconciled already.
func TestReconcileRaceLogsOne(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	rt := open(t, chargeAgent(sessions, chargeConfig{File: filepath.Join(dir, "effects")}, false))
	for range 5 {
		id, call := crashedCharge(t, rt)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				errs[i] = rt.Reconcile(ctx, id, call, vigil.Reconciliation{Result: "ok", By: "p" + string(rune('a'+i)), Wait: true})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else {
				require.ErrorIs(t, err, session.ErrAlreadyReconciled)
			}
		}
		assert.Equal(t, 1, won)
		log, err := rt.Session(ctx, id)
		require.NoError(t, err)
		n := 0
		for _, r := range log.Records {
			if r.Type() == session.TypeToolReconcile {
				n++
			}
		}
		assert.Equal(t, 1, n, strings.Repeat("one reconcile ", 1))
		verifyStored(t, sessions, id)
	}
}
