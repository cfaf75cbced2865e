package approval_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/approval"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// The suspended step the tests of approvals share, and its decisions.
var (
	suspendedStep = sessiontest.SuspendedStep
	decision      = sessiontest.Decision
)

var epoch = time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)

// records makes the records of evs, seqs from 0.
func records(t testing.TB, evs ...session.Event) []session.Record {
	t.Helper()
	return sessiontest.Records(t, epoch, evs...)
}

func TestCheckDecisionRefusesWhatIsNotPending(t *testing.T) {
	recs := records(t, append(suspendedStep(), decision("c", false))...)
	ev, err := approval.CheckDecision(recs, "a", session.ApprovalDecision{Allow: true, By: "bob", Reason: "fine"})
	require.NoError(t, err)
	assert.Equal(t, session.Event{Type: session.TypeApprovalDecision, Turn: 1, Step: 1, Data: session.ApprovalDecision{ID: "a", Allow: true, By: "bob", Reason: "fine"}}, ev)

	cases := []struct {
		name, id string
		recs     []session.Record
		want     error
	}{
		{"unknown", "zz", recs, session.ErrUnknownCall},
		{"ran without a request", "b", recs, session.ErrNotPending},
		{"decided", "c", recs, session.ErrAlreadyDecided},
		{"not suspended", "b", records(t, suspendedStep()[:10]...), session.ErrNotSuspended},
		{"unknown, not suspended", "zz", records(t, suspendedStep()[:10]...), session.ErrUnknownCall},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := approval.CheckDecision(tc.recs, tc.id, session.ApprovalDecision{Allow: true})
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, err = approval.CheckDecision(recs, "c", session.ApprovalDecision{})
	var de *session.DecidedError
	require.True(t, errors.As(err, &de))
	assert.Equal(t, "ann", de.Decision.By)
	assert.Contains(t, err.Error(), "denied by ann")
}

// TestCheckDecisionNamesWhoDecidedAfterTheStepResumed: a second decider
// who looks after the first decision was acted on is still told who
// decided, and the error says what changed since.
func TestCheckDecisionNamesWhoDecidedAfterTheStepResumed(t *testing.T) {
	in := func(ev session.Event) session.Event { ev.Turn, ev.Step = 1, 1; return ev }
	decided := append(suspendedStep(), decision("a", true), decision("c", false))
	resumed := append(decided[:len(decided):len(decided)],
		in(session.Event{Type: session.TypeToolStart, Data: session.ToolStart{ID: "a"}}),
		in(session.Event{Type: session.TypeToolResult, Sources: []int64{5}, Data: session.ToolResult{ID: "a", Name: "read_file", Content: "x"}}))
	ended := append(resumed[:len(resumed):len(resumed)],
		in(session.Event{Type: session.TypeToolResult, Sources: []int64{10}, Data: session.ToolResult{ID: "c", Name: "read_dir", Error: &session.ToolResultError{Code: session.CodeApprovalDenied, Message: "no"}}}),
		in(session.Event{Type: session.TypeStepEnd, Data: session.StepEnd{Finish: session.FinishToolCalls}}))
	cases := []struct {
		name  string
		evs   []session.Event
		id    string
		since error
	}{
		{"the call ran, its step waits", resumed, "a", session.ErrNotPending},
		{"the step ended", ended, "a", session.ErrNotSuspended},
		{"the step ended, a denial", ended, "c", session.ErrNotSuspended},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := records(t, tc.evs...)
			_, err := approval.CheckDecision(recs, tc.id, session.ApprovalDecision{Allow: true, By: "bob"})
			var de *session.DecidedError
			require.ErrorAs(t, err, &de)
			assert.ErrorIs(t, err, session.ErrAlreadyDecided)
			assert.ErrorIs(t, err, tc.since)
			assert.Equal(t, "ann", de.Decision.By)
			assert.Contains(t, err.Error(), "by ann")
		})
	}
}
