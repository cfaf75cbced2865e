package session_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// unknownLog is a closed turn whose call "a" ran to an unknown outcome,
// "b" returned, and "c" never started: a crash repaired.
func unknownLog() []session.Event {
	call := func(id string) session.ToolCall { return session.ToolCall{ID: id, Name: "refund", Arguments: "{}"} }
	e := func(code, msg string) *session.ToolResultError {
		return &session.ToolResultError{Code: code, Message: msg}
	}
	return []session.Event{
		{Type: session.TypeTurnStart, Turn: 1},
		user("refund order 7"),
		{Type: session.TypeStepStart, Turn: 1, Step: 1},
		assistant("", call("a"), call("b"), call("c")),                                    // 3
		{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: call("a")},                   // 4
		{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: call("b")},                   // 5
		{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: call("c")},                   // 6
		{Type: session.TypeToolStart, Turn: 1, Step: 1, Data: session.ToolStart{ID: "a"}}, // 7
		{Type: session.TypeToolStart, Turn: 1, Step: 1, Data: session.ToolStart{ID: "b"}}, // 8
		{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{5}, Data: session.ToolResult{ID: "b", Name: "refund", Content: "done"}},
		{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{4}, Data: session.ToolResult{ID: "a", Name: "refund", Error: e(session.CodeToolOutcomeUnknown, "")}}, // 10
		{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{6}, Data: session.ToolResult{ID: "c", Name: "refund", Error: e(session.CodeToolNotStarted, "")}},
		{Type: session.TypeStepEnd, Turn: 1, Step: 1, Data: session.StepEnd{Finish: session.FinishError}},
		{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonInterrupted}},
	}
}

func TestUnknownListsTheCallsToReconcile(t *testing.T) {
	recs := records(t, unknownLog()...)
	assert.Equal(t, []session.UnknownCall{{ID: "a", Name: "refund", Turn: 1, Step: 1, Result: 10}}, session.Unknown(recs))
	ev, err := session.CheckReconcile(recs, "a", session.ToolReconcile{Content: "refunded", By: "alice"})
	require.NoError(t, err)
	recs = records(t, append(unknownLog(), ev)...)
	assert.Empty(t, session.Unknown(recs))
}

// CheckReconcile logs a reconcile of an unknown call only, once, between
// turns, naming the call and citing its unknown result; everything else
// is refused with the error a caller branches on.
func TestCheckReconcile(t *testing.T) {
	base := unknownLog()
	ev, err := session.CheckReconcile(records(t, base...), "a", session.ToolReconcile{ID: "ignored", Name: "ignored", Error: &session.ToolResultError{Code: session.CodeToolError, Message: "card declined"}, By: "alice"})
	require.NoError(t, err)
	assert.Equal(t, session.Event{Type: session.TypeToolReconcile, Sources: []int64{10},
		Data: session.ToolReconcile{ID: "a", Name: "refund", Error: &session.ToolResultError{Code: session.CodeToolError, Message: "card declined"}, By: "alice"}}, ev)
	done := append(base[:len(base):len(base)], ev)

	openTurn := append(base[:len(base):len(base)], session.Event{Type: session.TypeTurnStart, Turn: 2}, user("next"))
	for _, tc := range []struct {
		name string
		log  []session.Event
		call string
		rec  session.ToolReconcile
		want error
	}{
		{"unknown call", base, "zz", session.ToolReconcile{Content: "x"}, session.ErrUnknownCall},
		{"known result", base, "b", session.ToolReconcile{Content: "x"}, session.ErrOutcomeKnown},
		{"not started", base, "c", session.ToolReconcile{Content: "x"}, session.ErrOutcomeKnown},
		{"reconciled", done, "a", session.ToolReconcile{Content: "x"}, session.ErrAlreadyReconciled},
		{"open turn", openTurn, "a", session.ToolReconcile{Content: "x"}, session.ErrOpenTurn},
		{"error without a code", base, "a", session.ToolReconcile{Error: &session.ToolResultError{Message: "m"}}, session.ErrInvalidPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := session.CheckReconcile(records(t, tc.log...), tc.call, tc.rec)
			require.ErrorIs(t, err, tc.want)
		})
	}
	_, err = session.CheckReconcile(records(t, done...), "a", session.ToolReconcile{Content: "x"})
	var re *session.ReconciledError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, session.ReconciledError{ID: "a", By: "alice", Seq: int64(len(base))}, *re)
	assert.Contains(t, err.Error(), "alice")
}

// The fold shows a reconcile as a user message appended where it was
// logged; the unknown result before it is left as it was, so the fold
// before the reconcile is a prefix of the fold after it.
func TestFoldAppendsAReconcileAsAUserMessage(t *testing.T) {
	base := unknownLog()
	before, err := session.DeriveMessages(records(t, base...))
	require.NoError(t, err)
	rec := session.ToolReconcile{Content: "refunded\n€12", By: "alice"}
	ev, err := session.CheckReconcile(records(t, base...), "a", rec)
	require.NoError(t, err)
	recs := records(t, append(base, ev)...)
	after, err := session.DeriveMessages(recs)
	require.NoError(t, err)
	require.Len(t, after, len(before)+1)
	assert.Equal(t, before, after[:len(before)])
	rec.ID, rec.Name = "a", "refund"
	assert.Equal(t, session.Message{Role: session.RoleUser, Content: session.ReconcileMessage(rec)}, after[len(before)])

	f := session.NewFold()
	for _, r := range recs {
		require.NoError(t, f.Add(r))
	}
	assert.Equal(t, after, f.Messages())
	m, ok := session.Project(recs[len(recs)-1])
	assert.True(t, ok)
	assert.Equal(t, after[len(before)], m)
}

func TestReconcileMessage(t *testing.T) {
	for _, tc := range []struct {
		rec  session.ToolReconcile
		want string
	}{
		{session.ToolReconcile{ID: "a", Name: "refund", Content: "ok", By: "alice"},
			"The outcome of tool call a (refund), which was unknown, was reconciled by alice. The call succeeded; its result:\nok"},
		{session.ToolReconcile{ID: "a", Name: "refund", By: "alice"},
			"The outcome of tool call a (refund), which was unknown, was reconciled by alice. The call succeeded, with an empty result."},
		{session.ToolReconcile{ID: "a", Error: &session.ToolResultError{Code: session.CodeToolError, Message: "declined"}},
			"The outcome of tool call a, which was unknown, was reconciled by running it again with its idempotency key. The call failed: error TOOL_ERROR: declined"},
	} {
		assert.Equal(t, tc.want, session.ReconcileMessage(tc.rec))
	}
}

// The two records are core: scoped, checked and decoded as such.
func TestRetryAndReconcileRecords(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	for _, tc := range []struct {
		name string
		ev   session.Event
		want error
	}{
		{"retry outside a turn", session.Event{Type: session.TypeToolRetry, Data: session.ToolRetry{ID: "a"}}, session.ErrInvalidScope},
		{"retry in a step", session.Event{Type: session.TypeToolRetry, Turn: 2, Step: 1, Data: session.ToolRetry{ID: "a"}}, session.ErrInvalidScope},
		{"retry without an id", session.Event{Type: session.TypeToolRetry, Turn: 2}, session.ErrNoCallID},
		{"reconcile in a step", session.Event{Type: session.TypeToolReconcile, Turn: 2, Step: 1, Data: session.ToolReconcile{ID: "a"}}, session.ErrInvalidScope},
		{"reconcile without an id", session.Event{Type: session.TypeToolReconcile, Data: session.ToolReconcile{Content: "x"}}, session.ErrNoCallID},
		{"reconcile unknown field", session.Event{Type: session.TypeToolReconcile, Data: []byte(`{"id":"a","x":1}`)}, session.ErrInvalidPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := session.NewRecord(20, now, tc.ev)
			require.ErrorIs(t, err, tc.want)
		})
	}
	for _, ev := range []session.Event{
		{Type: session.TypeToolRetry, Turn: 2, Sources: []int64{10}, Data: session.ToolRetry{ID: "a"}},
		{Type: session.TypeToolReconcile, Turn: 2, Sources: []int64{10, 19}, Data: session.ToolReconcile{ID: "a", Name: "refund", Content: "ok"}},
		{Type: session.TypeToolReconcile, Sources: []int64{10}, Data: session.ToolReconcile{ID: "a", Error: &session.ToolResultError{Code: session.CodeToolError, Message: "\x00\"<>\u2028"}, By: "bob"}},
	} {
		r, err := session.NewRecord(20, now, ev)
		require.NoError(t, err)
		back, err := session.DecodeRecord(r.Bytes())
		require.NoError(t, err, "%s", r)
		assert.Equal(t, r.String(), back.String())
		assert.Equal(t, ev.Type == session.TypeToolReconcile, back.IsSurface())
		assert.True(t, strings.HasPrefix(r.String(), `{"seq":20`))
	}
}
