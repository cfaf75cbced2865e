package vigil_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	jsonlstore "github.com/vigil-run/vigil/plugins/store/jsonl"
	_ "github.com/vigil-run/vigil/plugins/tools/calc" // tools/calc, by name
	"github.com/vigil-run/vigil/session"
)

// twoCalcs is a model reply calling calc twice in one step.
var twoCalcs = scripted.Reply{ToolCalls: []scripted.ToolCall{
	{Name: "calc", Arguments: map[string]any{"expression": "6*7"}},
	{Name: "calc", Arguments: map[string]any{"expression": "1+1"}},
}}

// askingAgent is a jsonl-backed composition with the model script given
// and a policy that asks before every calc.
func askingAgent(dir string, script ...scripted.Reply) vigil.Source {
	return vigil.Compose(
		vigil.Plugin("store/jsonl", &jsonlstore.Config{Dir: dir}),
		vigil.Plugin("provider/scripted", scripted.Config{Script: script}),
		vigil.Plugin("tools/calc", nil),
		vigil.Plugin("approvals", approvals.Config{Rules: []approvals.Rule{{Tool: "calc", Action: "ask", Reason: "arithmetic needs a yes"}}}),
		vigil.Plugin("agent", nil),
	)
}

// A turn that asks is suspended: Turn returns ErrSuspended with the
// calls; another runtime (another process) lists them, refuses a new
// prompt, and decides them one by one; the last decision resumes the
// turn there, which completes with the allowed call's result and the
// denied call's APPROVAL_DENIED.
func TestASuspendedTurnIsDecidedAndResumedByAnotherRuntime(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sessions")
	a := open(t, askingAgent(dir, twoCalcs))
	res, err := a.Turn(ctx, vigil.TurnOptions{Prompt: "compute"})
	require.ErrorIs(t, err, vigil.ErrSuspended)
	require.NotNil(t, res)
	assert.Equal(t, agentloop.ReasonSuspended, res.Reason)
	require.Len(t, res.Pending, 2)
	id := res.Session
	first, second := res.Pending[0].Call.ID, res.Pending[1].Call.ID
	require.NoError(t, a.Close())

	// The script is the model's, in this process: it answers.
	b := open(t, askingAgent(dir, scripted.Reply{Text: "Done."}))
	pending, err := b.Pending(ctx, id)
	require.NoError(t, err)
	require.NotNil(t, pending)
	require.Len(t, pending.Undecided(), 2)
	assert.Equal(t, "arithmetic needs a yes", pending.Calls[0].Request.Reason)

	_, err = b.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "hello?"})
	require.ErrorIs(t, err, vigil.ErrSuspended, "a new prompt on a suspended session is refused")

	got, err := b.Decide(ctx, vigil.DecideOptions{Session: id, Call: first, Decision: vigil.Decision{Allow: true, By: "ana"}})
	require.NoError(t, err)
	assert.Nil(t, got, "one call still waits: the turn stays suspended")
	_, err = b.Decide(ctx, vigil.DecideOptions{Session: id, Call: first, Decision: vigil.Decision{Allow: false, By: "bo"}})
	require.ErrorIs(t, err, session.ErrAlreadyDecided)
	assert.ErrorContains(t, err, "ana")

	var text string
	got, err = b.Decide(ctx, vigil.DecideOptions{Session: id, Call: second, Decision: vigil.Decision{By: "ana", Reason: "not that one"},
		OnChunk: func(c agentloop.Chunk) { text += c.Text }})
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, session.ReasonCompleted, got.Reason)
	assert.Equal(t, "Done.", text)

	log, err := b.Session(ctx, id)
	require.NoError(t, err)
	var results []session.ToolResult
	for _, r := range log.Records {
		if r.Type() == session.TypeToolResult {
			res, err := session.DecodeData[session.ToolResult](r)
			require.NoError(t, err)
			results = append(results, res)
		}
	}
	// The denial is answered first, before the allowed call runs.
	require.Len(t, results, 2)
	assert.Equal(t, []string{second, first}, []string{results[0].ID, results[1].ID})
	assert.Equal(t, "42", results[1].Content)
	require.NotNil(t, results[0].Error)
	assert.Equal(t, session.CodeApprovalDenied, results[0].Error.Code)
	assert.Contains(t, results[0].Error.Message, "not that one")

	pending, err = b.Pending(ctx, id)
	require.NoError(t, err)
	assert.Nil(t, pending, "nothing waits any more")
	_, err = b.Decide(ctx, vigil.DecideOptions{Session: id, Call: first, Decision: vigil.Decision{Allow: true}})
	assert.ErrorIs(t, err, session.ErrNotSuspended)

	f, err := os.Open(filepath.Join(dir, id+".jsonl"))
	require.NoError(t, err)
	defer f.Close()
	rep, err := invariants.Verify(f)
	require.NoError(t, err)
	assert.Empty(t, rep.Violations, "the log verifies, approval-before-run included")
}

func TestDecideRefusesWhatIsNotPending(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sessions")
	rt := open(t, askingAgent(dir, twoCalcs))
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "compute"})
	require.ErrorIs(t, err, vigil.ErrSuspended)
	yes := vigil.Decision{Allow: true, By: "ana"}

	_, err = rt.Decide(ctx, vigil.DecideOptions{Session: "01NOSUCHSESSION", Call: "x", Decision: yes})
	assert.ErrorIs(t, err, vigil.ErrNotFound)
	_, err = rt.Decide(ctx, vigil.DecideOptions{Session: res.Session, Call: "no_such_call", Decision: yes})
	assert.ErrorIs(t, err, session.ErrUnknownCall)

	pending, err := rt.Pending(ctx, res.Session)
	require.NoError(t, err)
	assert.Len(t, pending.Undecided(), 2, "refused decisions log nothing")
}
