package budget_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	_ "github.com/vigil-run/vigil/plugins"
	"github.com/vigil-run/vigil/plugins/budget"
	"github.com/vigil-run/vigil/session"
)

// compose opens a composition of the scripted model (the default script
// or script, YAML), the fs tools, the invariants strict and the budget
// plugin with budgetYAML.
func compose(t *testing.T, script, budgetYAML string) *vigil.Runtime {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hi\n"), 0o644))
	prov := "  - name: provider/scripted\n"
	if script != "" {
		prov += "    config: " + script + "\n"
	}
	yaml := "plugins:\n  - name: store/memory\n" + prov +
		"  - name: agent\n    config: { model: scripted, max_tokens: 1000 }\n" +
		"  - name: tools/fs\n    config: { root: " + dir + " }\n" +
		"  - name: invariants\n" +
		"  - name: budget\n    config: " + budgetYAML + "\n"
	path := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
	rt, err := vigil.Open(context.Background(), vigil.File(path))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, rt.Close()) })
	return rt
}

func verified(t *testing.T, rt *vigil.Runtime, id string) []session.Record {
	t.Helper()
	log, err := rt.Session(context.Background(), id)
	require.NoError(t, err)
	buf := session.AppendHeaderLine(nil, log.Info)
	for _, r := range log.Records {
		buf = r.AppendLine(buf)
	}
	rep, err := invariants.Verify(bytes.NewReader(buf))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
	return log.Records
}

func lastEnd(t *testing.T, recs []session.Record) session.TurnEnd {
	t.Helper()
	r := recs[len(recs)-1]
	require.Equal(t, session.TypeTurnEnd, r.Type())
	end, err := session.DecodeData[session.TurnEnd](r)
	require.NoError(t, err)
	return end
}

// The default script calls list_dir, then answers: a turn budget smaller
// than the first step's usage refuses the second step.
func TestTurnTokenBudgetEndsTheTurnBeforeTheNextRequest(t *testing.T) {
	ctx := context.Background()
	rt := compose(t, "", "{ turn: { tokens: 10 } }")
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "What is in this folder?"})
	be, ok := err.(*agentloop.BudgetError)
	require.True(t, ok, "error %v", err)
	assert.Equal(t, budget.LimitTurnTokens, be.Limit)
	require.NotNil(t, res)
	assert.Equal(t, session.ReasonBudget, res.Reason)
	assert.Equal(t, 1, res.Steps)

	recs := verified(t, rt, res.Session)
	spent := budget.Tally(recs, nil).Session
	assert.Equal(t, res.Usage.Input, spent.Input)
	assert.Equal(t, res.Usage.Output, spent.Output)
	assert.Equal(t, session.TurnEnd{Reason: session.ReasonBudget,
		Error: "budget: the turn's tokens are spent: " + itoa(spent.Tokens()) + " of 10"}, lastEnd(t, recs))

	// Step 1 was capped to the 10 tokens the turn had, in its logged
	// header, which the request carried (the digest verified above).
	h, ok := session.DeriveHeader(recs)
	require.True(t, ok)
	assert.Equal(t, 10, h.MaxTokens)

	// The session goes on: the next turn starts afresh and is refused at
	// the same point, again a clear outcome in a valid log.
	res, err = rt.Turn(ctx, vigil.TurnOptions{Session: res.Session, Prompt: "again"})
	require.Error(t, err)
	assert.Equal(t, session.ReasonBudget, res.Reason)
	assert.Equal(t, 2, res.Turn)
	verified(t, rt, res.Session)
}

// A turn a budget ended is carried on by a continuation: a new turn,
// with a turn budget of its own, asks the model for the answer it was
// refused.
func TestABudgetEndedTurnContinues(t *testing.T) {
	ctx := context.Background()
	rt := compose(t, "", "{ turn: { tokens: 10 } }")
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "What is in this folder?"})
	require.Error(t, err)
	require.Equal(t, session.ReasonBudget, res.Reason)

	res, err = rt.Turn(ctx, vigil.TurnOptions{Session: res.Session, Continue: true})
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, 2, res.Turn)
	assert.Contains(t, res.Content, "a.txt", "the answer from the tool result turn 1 logged")
	recs := verified(t, rt, res.Session)
	for _, r := range recs {
		if r.Type() == session.TypeTurnStart && r.Turn() == 2 {
			ts, err := session.DecodeData[session.TurnStart](r)
			require.NoError(t, err)
			assert.Equal(t, 1, ts.Continues)
		}
	}
}

// A session budget spent by earlier turns refuses a new turn's first
// step: turn/start, user/message, turn/end budget.
func TestSessionTokenBudgetRefusesTheNextTurn(t *testing.T) {
	ctx := context.Background()
	rt := compose(t, "", "{ session: { tokens: 40 } }")
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "What is in this folder?"})
	require.NoError(t, err, "the first turn fits")
	recs := verified(t, rt, res.Session)
	// Each step was capped to what the session had left: 40, then 40
	// less step 1's usage, each in a logged header.
	var caps, spent []int
	for _, r := range recs {
		switch r.Type() {
		case session.TypeRequestHeader:
			h, err := session.DecodeData[session.RequestHeader](r)
			require.NoError(t, err)
			caps = append(caps, h.Header.MaxTokens)
		case session.TypeStepEnd:
			e, err := session.DecodeData[session.StepEnd](r)
			require.NoError(t, err)
			spent = append(spent, e.Usage.Input+e.Usage.Output)
		}
	}
	require.Len(t, spent, 2)
	assert.Equal(t, []int{40, 40 - spent[0]}, caps)
	require.GreaterOrEqual(t, spent[0]+spent[1], 40, "the test needs the first turn to spend the budget")

	res, err = rt.Turn(ctx, vigil.TurnOptions{Session: res.Session, Prompt: "again"})
	require.Error(t, err)
	assert.Equal(t, session.ReasonBudget, res.Reason)
	assert.Equal(t, 0, res.Steps)
	recs = verified(t, rt, res.Session)
	n := len(recs)
	assert.Equal(t, []string{session.TypeTurnStart, session.TypeUserMessage, session.TypeTurnEnd},
		[]string{recs[n-3].Type(), recs[n-2].Type(), recs[n-1].Type()})
	assert.Contains(t, lastEnd(t, recs).Error, "budget: the session's tokens are spent")
}

// A model that calls the same tool with the same arguments again and
// again is stopped once max_repeats calls were made.
func TestRepeatedCallsEndTheTurn(t *testing.T) {
	ctx := context.Background()
	rt := compose(t, `{ repeat: true, script: [ { tool_calls: [ { name: read_file, arguments: { path: a.txt } } ] } ] }`, "{ max_repeats: 2 }")
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "loop"})
	be, ok := err.(*agentloop.BudgetError)
	require.True(t, ok, "error %v", err)
	assert.Equal(t, budget.LimitRepeats, be.Limit)
	assert.Equal(t, 2, res.Steps)
	recs := verified(t, rt, res.Session)
	assert.Equal(t, "budget: read_file was called 2 times with the same arguments in this turn (max_repeats 2)", lastEnd(t, recs).Error)
}

func itoa(n int) string {
	b := []byte{}
	for ; n > 0 || len(b) == 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
