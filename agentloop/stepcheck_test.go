package agentloop_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

func verifyLog(t *testing.T, info session.Info, recs []session.Record) {
	t.Helper()
	buf := session.AppendHeaderLine(nil, info)
	for _, rec := range recs {
		buf = rec.AppendLine(buf)
	}
	rep, err := invariants.Verify(bytes.NewReader(buf))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
}

// A BudgetError from an agent/step listener ends the turn with reason
// budget before anything of the refused step is logged, and the log
// verifies.
func TestStepCheckBudgetErrorEndsTurnBeforeTheStep(t *testing.T) {
	e := newEnv(t)
	_, tools := workspace(t)
	prov := script(t,
		scripted.Reply{Text: "looking", ToolCalls: []scripted.ToolCall{{Name: "list_dir", Arguments: map[string]any{"path": "."}}}},
		scripted.Reply{Text: "never asked"},
	)
	a := agentloop.New(e.c, agentloop.Config{Model: "scripted"}, agentloop.WithProvider(prov), agentloop.WithTools(tools...))
	var seen []int
	agentloop.StepBegin.On(e.c, func(_ context.Context, s *agentloop.StepCheck) error {
		seen = append(seen, s.Step)
		if s.Step == 2 {
			return &agentloop.BudgetError{Limit: "turn.tokens", Message: "budget: spent"}
		}
		return nil
	})
	sess := e.session()
	res, err := a.Run(context.Background(), sess, "hi")
	be, ok := errors.AsType[*agentloop.BudgetError](err)
	require.True(t, ok, "error %v", err)
	assert.Equal(t, "turn.tokens", be.Limit)
	require.NotNil(t, res)
	assert.Equal(t, session.ReasonBudget, res.Reason)
	assert.Equal(t, 1, res.Steps, "the refused step never started")
	assert.Equal(t, []int{1, 2}, seen)

	recs := sess.Records()
	assert.Len(t, ofType(recs, session.TypeStepStart), 1)
	last := recs[len(recs)-1]
	assert.Equal(t, session.TypeStepEnd, recs[len(recs)-2].Type(), "turn/end follows step 1's end")
	end := decode[session.TurnEnd](t, last)
	assert.Equal(t, session.TurnEnd{Reason: session.ReasonBudget, Error: "budget: spent"}, end)
	verifyLog(t, sess.Info(), recs)

	// The session goes on: the next turn runs (the listener lets step 1 pass).
	res, err = a.Run(context.Background(), sess, "again")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	verifyLog(t, sess.Info(), sess.Records())
}

// Any other listener error ends the turn with reason error.
func TestStepCheckOtherErrorEndsTurnWithError(t *testing.T) {
	e := newEnv(t)
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(&recorder{}))
	agentloop.StepBegin.On(e.c, func(context.Context, *agentloop.StepCheck) error { return errBoom })
	sess := e.session()
	res, err := a.Run(context.Background(), sess, "hi")
	require.ErrorIs(t, err, errBoom)
	assert.Equal(t, session.ReasonError, res.Reason)
	assert.Empty(t, ofType(sess.Records(), session.TypeStepStart))
}

// A cap lowers the step's max_tokens in the logged header (a change), the
// request carries the logged header, and the next uncapped step logs the
// agent's again; the invariants (strict) and verify accept every request.
func TestStepCheckCapGoesIntoTheLoggedHeader(t *testing.T) {
	tests := []struct {
		name      string
		agentMax  int
		caps      []int // per turn, 0 = no cap
		wantSent  []int
		wantHeads []int // max_tokens of each request/header logged
	}{
		{"cap below the agent's", 100, []int{40, 0}, []int{40, 100}, []int{40, 100}},
		{"cap above the agent's changes nothing", 100, []int{400, 0}, []int{100, 100}, []int{100}},
		{"cap without an agent max", 0, []int{7, 7}, []int{7, 7}, []int{7}},
		{"lowest cap wins, at least 1", 0, []int{-3, 0}, []int{1, 0}, []int{1, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			rec := &recorder{}
			a := agentloop.New(e.c, agentloop.Config{MaxTokens: tc.agentMax}, agentloop.WithProvider(rec))
			agentloop.StepBegin.On(e.c, func(_ context.Context, s *agentloop.StepCheck) error {
				if c := tc.caps[s.Turn-1]; c != 0 {
					s.Cap(c + 10)
					s.Cap(c) // the lower wins
					s.Cap(c + 5)
				}
				return nil
			})
			sess := e.session()
			for range tc.caps {
				_, err := a.Run(context.Background(), sess, "hi")
				require.NoError(t, err)
			}
			var sent []int
			for _, r := range rec.requests() {
				sent = append(sent, r.Header.MaxTokens)
			}
			assert.Equal(t, tc.wantSent, sent)
			var heads []int
			for _, r := range ofType(sess.Records(), session.TypeRequestHeader) {
				h := decode[session.RequestHeader](t, r)
				if h.Reason != session.HeaderResume {
					heads = append(heads, h.Header.MaxTokens)
				}
			}
			assert.Equal(t, tc.wantHeads, heads)
			verifyLog(t, sess.Info(), sess.Records())
		})
	}
}
