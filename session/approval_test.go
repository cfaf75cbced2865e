package session_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// suspendedStep is turn 1, step 1 asking for calls a (asked), b (run)
// and c (asked): the tail a loop leaves when it suspends.
func suspendedStep() []session.Event {
	call := func(id, name, args string) session.ToolCall {
		return session.ToolCall{ID: id, Name: name, Arguments: args}
	}
	in := func(ev session.Event) session.Event { ev.Turn, ev.Step = 1, 1; return ev }
	return []session.Event{
		{Type: session.TypeApprovalPolicy, Data: session.ApprovalPolicy{By: "approvals", Default: session.ActionAllow, Rules: []session.ApprovalRule{{Tool: "read_*", Action: session.ActionAsk, Reason: "reads need a yes"}}}},
		{Type: session.TypeTurnStart, Turn: 1},
		user("q"),
		{Type: session.TypeStepStart, Turn: 1, Step: 1},
		assistant("", call("a", "read_file", `{"path":"x"}`), call("b", "calc", "{}"), call("c", "read_dir", "{}")), // 4
		in(session.Event{Type: session.TypeToolCall, Data: call("a", "read_file", `{"path":"x"}`)}),                 // 5
		in(session.Event{Type: session.TypeApprovalRequest, Data: session.ApprovalRequest{ID: "a", By: "approvals", Reason: "reads need a yes"}}),
		in(session.Event{Type: session.TypeToolCall, Data: call("b", "calc", "{}")}), // 7
		in(session.Event{Type: session.TypeToolStart, Data: session.ToolStart{ID: "b"}}),
		in(session.Event{Type: session.TypeToolResult, Sources: []int64{7}, Data: session.ToolResult{ID: "b", Name: "calc", Content: "2"}}),
		in(session.Event{Type: session.TypeToolCall, Data: call("c", "read_dir", "{}")}), // 10
		in(session.Event{Type: session.TypeApprovalRequest, Data: session.ApprovalRequest{ID: "c", By: "approvals"}}),
	}
}

func decision(id string, allow bool) session.Event {
	return session.Event{Type: session.TypeApprovalDecision, Turn: 1, Step: 1, Data: session.ApprovalDecision{ID: id, Allow: allow, By: "ann"}}
}

func TestSuspendedFoldsThePendingCalls(t *testing.T) {
	recs := records(t, suspendedStep()...)
	s := session.Suspended(recs)
	require.NotNil(t, s)
	assert.Equal(t, 1, s.Turn)
	assert.Equal(t, 1, s.Step)
	require.Len(t, s.Calls, 2)
	assert.Equal(t, session.PendingCall{Call: session.ToolCall{ID: "a", Name: "read_file", Arguments: `{"path":"x"}`}, CallSeq: 5,
		Request: session.ApprovalRequest{ID: "a", By: "approvals", Reason: "reads need a yes"}, RequestSeq: 6}, s.Calls[0])
	assert.Equal(t, "c", s.Calls[1].Call.ID)
	assert.False(t, s.Ready())
	assert.Len(t, s.Undecided(), 2)

	recs = records(t, append(suspendedStep(), decision("c", false))...)
	s = session.Suspended(recs)
	require.NotNil(t, s)
	require.Len(t, s.Undecided(), 1)
	assert.Equal(t, "a", s.Undecided()[0].Call.ID)
	assert.Equal(t, &session.ApprovalDecision{ID: "c", By: "ann"}, s.Find("c").Decision)
	assert.Equal(t, int64(12), s.Find("c").DecisionSeq)

	s = session.Suspended(records(t, append(suspendedStep(), decision("c", false), decision("a", true))...))
	require.NotNil(t, s)
	assert.True(t, s.Ready())
}

// TestClosersLeaveASuspendedStepOpen: a tail waiting for decisions, or
// decided and not yet resumed, is not repaired; a step with a call that
// needs no decision still pending, or a decided call that started, is a
// crash and is closed.
func TestClosersLeaveASuspendedStepOpen(t *testing.T) {
	in := func(ev session.Event) session.Event { ev.Turn, ev.Step = 1, 1; return ev }
	base := suspendedStep()
	cases := []struct {
		name      string
		evs       []session.Event
		suspended bool
	}{
		{"waiting", base, true},
		{"one decided", append(base[:len(base):len(base)], decision("a", true)), true},
		{"all decided", append(base[:len(base):len(base)], decision("a", true), decision("c", false)), true},
		{"an allowed call started", append(base[:len(base):len(base)], decision("a", true), decision("c", false),
			in(session.Event{Type: session.TypeToolStart, Data: session.ToolStart{ID: "a"}})), false},
		{"a call without a request pending", base[:len(base)-1], false},
		{"a call not logged yet", base[:5], false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := records(t, tc.evs...)
			if tc.suspended {
				assert.NotNil(t, session.Suspended(recs))
				assert.Nil(t, session.Closers(recs))
				// The loop can still close it when its turn fails.
				closers := session.CloseTail(recs)
				require.NotEmpty(t, closers)
				assert.Equal(t, session.TypeTurnEnd, closers[len(closers)-1].Type)
				return
			}
			assert.Nil(t, session.Suspended(recs))
			assert.NotEmpty(t, session.Closers(recs))
		})
	}
}

func TestCheckDecisionRefusesWhatIsNotPending(t *testing.T) {
	recs := records(t, append(suspendedStep(), decision("c", false))...)
	ev, err := session.CheckDecision(recs, "a", session.ApprovalDecision{Allow: true, By: "bob", Reason: "fine"})
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
			_, err := session.CheckDecision(tc.recs, tc.id, session.ApprovalDecision{Allow: true})
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, err = session.CheckDecision(recs, "c", session.ApprovalDecision{})
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
			_, err := session.CheckDecision(recs, tc.id, session.ApprovalDecision{Allow: true, By: "bob"})
			var de *session.DecidedError
			require.ErrorAs(t, err, &de)
			assert.ErrorIs(t, err, session.ErrAlreadyDecided)
			assert.ErrorIs(t, err, tc.since)
			assert.Equal(t, "ann", de.Decision.By)
			assert.Contains(t, err.Error(), "by ann")
		})
	}
}

func TestApprovalRecordsRoundTripAndRefuseBadPayloads(t *testing.T) {
	recs := records(t, append(suspendedStep(), decision("c", false))...)
	var buf bytes.Buffer
	buf.Write(session.AppendHeaderLine(nil, session.Info{ID: "s1", Version: session.Version, Created: epoch}))
	for _, r := range recs {
		buf.Write(r.AppendLine(nil))
	}
	log, err := session.DecodeBytes(buf.Bytes())
	require.NoError(t, err)
	require.Len(t, log.Records, len(recs))
	for i, r := range log.Records {
		assert.Equal(t, recs[i].String(), r.String())
	}
	assert.Equal(t, `{"id":"c","allow":false,"by":"ann"}`, string(recs[12].Data()))

	bad := []struct {
		name string
		ev   session.Event
		want error
	}{
		{"request without id", session.Event{Type: session.TypeApprovalRequest, Turn: 1, Step: 1, Data: session.ApprovalRequest{}}, session.ErrNoCallID},
		{"decision without step", session.Event{Type: session.TypeApprovalDecision, Turn: 1, Data: session.ApprovalDecision{ID: "a"}}, session.ErrInvalidScope},
		{"decision with a bad scope", session.Event{Type: session.TypeApprovalDecision, Turn: 1, Step: 1, Data: session.ApprovalDecision{ID: "a", Scope: "forever"}}, session.ErrInvalidPayload},
		{"decision with an unknown field", session.Event{Type: session.TypeApprovalDecision, Turn: 1, Step: 1, Data: []byte(`{"id":"a","allow":true,"until":"never"}`)}, session.ErrInvalidPayload},
		{"policy in a step", session.Event{Type: session.TypeApprovalPolicy, Turn: 1, Step: 1, Data: session.ApprovalPolicy{Default: "allow"}}, session.ErrInvalidScope},
		{"policy with a bad regexp", session.Event{Type: session.TypeApprovalPolicy, Data: session.ApprovalPolicy{Default: "allow", Rules: []session.ApprovalRule{{Tool: "*", Arguments: "(", Action: "deny"}}}}, session.ErrInvalidPolicy},
		{"policy with a bad action", session.Event{Type: session.TypeApprovalPolicy, Data: session.ApprovalPolicy{Default: "maybe"}}, session.ErrInvalidPolicy},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := session.NewRecord(20, epoch, tc.ev)
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func TestPolicyFirstMatchingRuleWins(t *testing.T) {
	m, err := session.CompilePolicy(session.ApprovalPolicy{Default: session.ActionAllow, Rules: []session.ApprovalRule{
		{Tool: "shell", Arguments: `rm\s+-rf`, Action: session.ActionDeny, Reason: "no recursive deletes"},
		{Tool: "shell", Action: session.ActionAsk},
		{Tool: "read_*", Action: session.ActionAsk, Reason: "reads"},
	}})
	require.NoError(t, err)
	cases := []struct{ tool, args, action, reason string }{
		{"shell", `{"cmd":"rm -rf /"}`, session.ActionDeny, "no recursive deletes"},
		{"shell", `{"cmd":"ls"}`, session.ActionAsk, ""},
		{"read_file", `{}`, session.ActionAsk, "reads"},
		{"calc", `{}`, session.ActionAllow, ""},
	}
	for _, tc := range cases {
		action, reason := m.Match(tc.tool, tc.args)
		assert.Equal(t, tc.action, action, tc.tool+" "+tc.args)
		assert.Equal(t, tc.reason, reason, tc.tool+" "+tc.args)
	}
}
