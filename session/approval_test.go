package session_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// The suspended step the tests of approvals share (sessiontest), and its
// decisions.
var (
	suspendedStep = sessiontest.SuspendedStep
	decision      = sessiontest.Decision
)

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
