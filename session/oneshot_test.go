package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// TestOneshotRequestIsMadeOfTheLog: a one-shot's messages are the
// projections of its sources in the order cited (a record projecting to
// no message adds none), then its instruction; its header is the one it
// logged. A one-shot without an instruction is an older build's: not
// derivable.
func TestOneshotRequestIsMadeOfTheLog(t *testing.T) {
	call := session.ToolCall{ID: "c1", Name: "list_dir", Arguments: `{"path":"."}`}
	h := session.Header{Provider: "p", Model: "m", Tools: []session.ToolSpec{}}
	msgs := []session.Message{
		{Role: session.RoleAssistant, ToolCalls: []session.ToolCall{call}},
		{Role: session.RoleUser, Content: "q"},
		{Role: session.RoleTool, ToolCallID: "c1", Name: "list_dir", Content: "a.txt"},
		{Role: session.RoleUser, Content: "Summarize."},
	}
	recs := records(t,
		user("q"), // 0
		session.Event{Type: session.TypeStepStart, Turn: 1, Step: 1},
		assistant("", call), // 2
		session.Event{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: call}, // 3
		session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{3}, Data: session.ToolResult{ID: "c1", Name: "list_dir", Content: "a.txt"}},
		session.Event{Type: session.TypeRequestOneshot, Sources: []int64{2, 0, 3, 4}, Data: session.Oneshot{Purpose: "x", SHA256: "s", Messages: 4, Instruction: "Summarize.", Header: &h}},
		session.Event{Type: session.TypeRequestOneshot, Sources: []int64{0}, Data: session.Oneshot{Purpose: "x", SHA256: "s", Messages: 2}},
	)
	got, err := session.OneshotMessages(recs, []int64{2, 0, 3, 4}, "Summarize.")
	require.NoError(t, err)
	assert.Equal(t, msgs, got)

	gh, gm, ok, err := session.OneshotRequest(recs, recs[5])
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, msgs, gm)
	assert.Equal(t, session.Header{Provider: "p", Model: "m"}, gh, "normalized as a step's header is")

	_, _, ok, err = session.OneshotRequest(recs, recs[6])
	require.NoError(t, err)
	assert.False(t, ok, "no instruction: an older build's one-shot")

	_, err = session.OneshotMessages(recs, []int64{9}, "x")
	assert.Error(t, err)
}

// TestSuspendedStepKeepsItsUsageForItsStepEnd: the usage a step logged
// before it suspended is the suspension's, and the step/end that repair
// writes for it carries it.
func TestSuspendedStepKeepsItsUsageForItsStepEnd(t *testing.T) {
	u := session.Usage{Input: 510, Output: 20}
	evs := append(suspendedStep(), session.Event{Type: session.TypeStepUsage, Turn: 1, Step: 1, Data: u})
	s := session.Suspended(records(t, evs...))
	require.NotNil(t, s)
	assert.Equal(t, &u, s.Usage)

	closers := session.CloseTail(records(t, evs...))
	var end *session.StepEnd
	for _, ev := range closers {
		if ev.Type == session.TypeStepEnd {
			e := ev.Data.(session.StepEnd)
			end = &e
		}
	}
	require.NotNil(t, end)
	assert.Equal(t, &u, end.Usage)

	// Without one, none.
	assert.Nil(t, session.Suspended(records(t, suspendedStep()...)).Usage)
}
