//go:build unix

package external_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/plugins/scripted"
	"github.com/vigil-run/vigil/session"
)

func scriptedProvider(t *testing.T, replies ...scripted.Reply) *scripted.Provider {
	t.Helper()
	p, err := scripted.New(scripted.Config{Script: replies})
	require.NoError(t, err)
	return p
}

func types(recs []*session.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Type()
	}
	return out
}

func ofType(recs []*session.Record, typ string) []*session.Record {
	var out []*session.Record
	for _, r := range recs {
		if r.Type() == typ {
			out = append(out, r)
		}
	}
	return out
}

func TestTurnUsesToolPluginAndIsVetoedByPolicyPlugin(t *testing.T) {
	h := newHost(t)
	h.mustLoad(&external.Config{Path: bins["units"], Config: map[string]any{"precision": 4}})
	h.mustLoad(&external.Config{Path: bins["policy"], Config: map[string]any{
		"rules": []any{map[string]any{"tool": "^convert$", "arguments": `"(from|to)":"ly"`, "reason": "no astronomy"}},
	}})
	prov := scriptedProvider(t,
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "convert", Arguments: map[string]any{"value": 10, "from": "km", "to": "mi"}}}},
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "convert", Arguments: map[string]any{"value": 1, "from": "ly", "to": "km"}}}},
		scripted.Reply{Text: "never asked"},
	)
	a := agentloop.New(h.c, agentloop.Config{}, agentloop.WithProvider(prov))
	sess := h.session()

	res, runErr := a.Run(context.Background(), sess, "how far?")
	require.Error(t, runErr)
	var veto *external.VetoError
	require.ErrorAs(t, runErr, &veto)
	assert.Equal(t, "policy", veto.Plugin)
	assert.Equal(t, "POLICY", veto.Code)
	assert.Contains(t, veto.Reason, "no astronomy")
	require.NotNil(t, res)
	assert.Equal(t, session.ReasonError, res.Reason)

	recs := sess.Records()
	// The first call ran in the plugin process; its result is logged.
	results := ofType(recs, session.TypeToolResult)
	require.Len(t, results, 1)
	r, err := session.DecodeData[session.ToolResult](results[0])
	require.NoError(t, err)
	assert.Equal(t, "6.214 mi", r.Content)
	assert.Nil(t, r.Error)
	// The vetoed call was never committed.
	calls := ofType(recs, session.TypeToolCall)
	require.Len(t, calls, 1)
	last := recs[len(recs)-1]
	if last.Type() == session.TypeTurnEnd {
		// A loop that closes the open step before turn/end.
		assert.Equal(t, session.TypeStepEnd, recs[len(recs)-2].Type())
		end, err := session.DecodeData[session.TurnEnd](last)
		require.NoError(t, err)
		assert.Equal(t, session.ReasonError, end.Reason)
	} else {
		// The loop as it is: the failed append returns from the step with
		// step 2 still open, so the turn/end it then appends breaks
		// turn-nesting and the strict invariants refuse it. The turn stays
		// open (crash repair closes it when the log is next loaded).
		assert.Equal(t, session.TypeAssistantMessage, last.Type())
		var inv *invariants.InvariantError
		require.ErrorAs(t, runErr, &inv)
		assert.Equal(t, invariants.RuleTurnNesting, inv.Violation.Rule)
		_, err := a.Run(context.Background(), sess, "again")
		require.ErrorIs(t, err, session.ErrOpenTurn)
	}
	verify(t, sess)
}
