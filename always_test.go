package vigil_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// TestAlwaysForThisSessionThroughTheRuntime: "always" given through
// Runtime.Decide lets a later turn's call of the same tool run without
// suspending, on a decision by session-rule citing it; another session
// still asks.
func TestAlwaysForThisSessionThroughTheRuntime(t *testing.T) {
	ctx := context.Background()
	calc := scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "6*7"}}}}
	rt := open(t, askingAgent(filepath.Join(t.TempDir(), "sessions"),
		calc, scripted.Reply{Text: "42."}, calc, scripted.Reply{Text: "42 again."}, calc))
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "compute"})
	require.ErrorIs(t, err, vigil.ErrSuspended)
	id := res.Session
	res, err = rt.Decide(ctx, vigil.DecideOptions{Session: id, Call: res.Pending[0].Call.ID,
		Decision: vigil.Decision{Allow: true, By: "ana", Scope: session.ScopeSession}})
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, res.Reason)

	res, err = rt.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "again"})
	require.NoError(t, err, "the call is covered: no suspension")
	assert.Equal(t, "42 again.", res.Content)
	log, err := rt.Session(ctx, id)
	require.NoError(t, err)
	var decisions []session.ApprovalDecision
	for _, r := range log.Records {
		if r.Type() == session.TypeApprovalDecision {
			d, err := session.DecodeData[session.ApprovalDecision](r)
			require.NoError(t, err)
			decisions = append(decisions, d)
		}
	}
	require.Len(t, decisions, 2)
	assert.Equal(t, session.SessionRuleBy, decisions[1].By)
	assert.NotZero(t, decisions[1].Cites)

	_, err = rt.Turn(ctx, vigil.TurnOptions{Prompt: "another session"})
	assert.ErrorIs(t, err, vigil.ErrSuspended, "always is for this session only")
}
