package vigil_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	jsonlstore "github.com/vigil-run/vigil/plugins/store/jsonl"
	"github.com/vigil-run/vigil/session"
)

// calcAgent is a jsonl-backed composition with calc and the model script
// given, under the strict invariants.
func calcAgent(dir string, script ...scripted.Reply) vigil.Source {
	return vigil.Compose(
		vigil.Plugin("store/jsonl", &jsonlstore.Config{Dir: dir}),
		vigil.Plugin("provider/scripted", scripted.Config{Script: script}),
		vigil.Plugin("tools/calc", nil),
		vigil.Plugin("agent", nil),
		vigil.Plugin("invariants", &invariants.Config{Mode: invariants.ModeStrict}),
	)
}

// cutAfter truncates a session's JSONL log after its first record of
// type typ: what a process killed right then leaves (the store syncs
// every append).
func cutAfter(t *testing.T, path, typ string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.SplitAfter(b, []byte("\n"))
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"type":"`+typ+`"`)) {
			require.NoError(t, os.WriteFile(path, bytes.Join(lines[:i+1], nil), 0o644))
			return
		}
	}
	t.Fatalf("no %s in %s", typ, path)
}

// TestTurnContinuesAnInterruptedTurnUnderItsLease: a turn cut while its
// tool ran is repaired by the next runtime and continued with Continue:
// turn 2 continues turn 1, with no new user message, and the model
// answers from the TOOL_OUTCOME_UNKNOWN result; the log verifies.
func TestTurnContinuesAnInterruptedTurnUnderItsLease(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sessions")
	a := open(t, calcAgent(dir, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "6*7"}}}}, scripted.Reply{Text: "42."}))
	res, err := a.Turn(ctx, vigil.TurnOptions{Prompt: "compute"})
	require.NoError(t, err)
	id := res.Session
	require.NoError(t, a.Close())
	path := filepath.Join(dir, id+".jsonl")
	cutAfter(t, path, session.TypeToolStart)

	b := open(t, calcAgent(dir, scripted.Reply{Text: "I do not know whether it ran."}))
	res, err = b.Turn(ctx, vigil.TurnOptions{Session: id, Continue: true})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Turn)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, "I do not know whether it ran.", res.Content)

	log, err := b.Session(ctx, id)
	require.NoError(t, err)
	msgs, err := session.DeriveMessages(log.Records)
	require.NoError(t, err)
	require.Len(t, msgs, 4, "user, assistant asking for calc, its repaired result, the continuation's answer")
	assert.Equal(t, session.RoleTool, msgs[2].Role)
	assert.Contains(t, msgs[2].Content, session.CodeToolOutcomeUnknown)
	rep, err := invariants.VerifyFile(path)
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
}

// TestTurnRefusesAContinuationWithNothingToContinue: a continuation
// with a prompt, of no session, or of a session whose last turn
// completed is refused before anything is appended.
func TestTurnRefusesAContinuationWithNothingToContinue(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sessions")
	rt := open(t, calcAgent(dir, scripted.Reply{Text: "done"}))
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "hi"})
	require.NoError(t, err)
	done := res.Session
	cases := []struct {
		name    string
		opts    vigil.TurnOptions
		nothing bool // the refusal is ErrNothingToContinue
	}{
		{"with a prompt", vigil.TurnOptions{Session: done, Prompt: "more", Continue: true}, false},
		{"of no session", vigil.TurnOptions{Continue: true}, true},
		{"of a completed turn", vigil.TurnOptions{Session: done, Continue: true}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, err := rt.Sessions(ctx)
			require.NoError(t, err)
			log, err := rt.Session(ctx, done)
			require.NoError(t, err)
			res, err := rt.Turn(ctx, tc.opts)
			require.Error(t, err)
			assert.Nil(t, res)
			assert.Equal(t, tc.nothing, errors.Is(err, vigil.ErrNothingToContinue), "%v", err)
			after, err := rt.Sessions(ctx)
			require.NoError(t, err)
			assert.Len(t, after, len(before), "no session is created")
			log2, err := rt.Session(ctx, done)
			require.NoError(t, err)
			assert.Len(t, log2.Records, len(log.Records), "nothing is appended")
		})
	}
}
