//go:build unix

package external_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

func scriptedProvider(t *testing.T, replies ...scripted.Reply) *scripted.Provider {
	t.Helper()
	p, err := scripted.New(scripted.Config{Script: replies})
	require.NoError(t, err)
	return p
}

func types(recs []session.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Type()
	}
	return out
}

func ofType(recs []session.Record, typ string) []session.Record {
	var out []session.Record
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
	assert.Equal(t, session.ReasonBlocked, res.Reason)

	recs := sess.Records()
	// The first call ran in the plugin process; its result is logged. The
	// vetoed call was never committed: the loop closed the open step the
	// way crash repair does, answering it TOOL_NOT_STARTED.
	results := ofType(recs, session.TypeToolResult)
	require.Len(t, results, 2)
	r, err := session.DecodeData[session.ToolResult](results[0])
	require.NoError(t, err)
	assert.Equal(t, "6.214 mi", r.Content)
	assert.Nil(t, r.Error)
	r, err = session.DecodeData[session.ToolResult](results[1])
	require.NoError(t, err)
	require.NotNil(t, r.Error)
	assert.Equal(t, session.CodeToolNotStarted, r.Error.Code)
	calls := ofType(recs, session.TypeToolCall)
	require.Len(t, calls, 1)
	last := recs[len(recs)-1]
	require.Equal(t, session.TypeTurnEnd, last.Type())
	assert.Equal(t, session.TypeStepEnd, recs[len(recs)-2].Type())
	end, err := session.DecodeData[session.TurnEnd](last)
	require.NoError(t, err)
	assert.Equal(t, session.ReasonBlocked, end.Reason)
	// The session goes on: the next turn starts normally.
	_, err = a.Run(context.Background(), sess, "again")
	require.NoError(t, err)
	verify(t, sess)
}
