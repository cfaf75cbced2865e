package sessiontest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// Records makes the records of evs, seqs from 0, all at time at: a log
// without a header or a store, for the pure readers of a log.
func Records(t testing.TB, at time.Time, evs ...session.Event) []session.Record {
	t.Helper()
	out := make([]session.Record, len(evs))
	for i, ev := range evs {
		r, err := session.NewRecord(int64(i), at, ev)
		require.NoError(t, err)
		out[i] = r
	}
	return out
}

// SuspendedStep is turn 1, step 1 asking for calls a (asked), b (run)
// and c (asked): the tail a loop leaves when it suspends. Its records
// are seqs 0 to 11; the calls' tool/calls are seqs 5, 7 and 10.
func SuspendedStep() []session.Event {
	call := func(id, name, args string) session.ToolCall {
		return session.ToolCall{ID: id, Name: name, Arguments: args}
	}
	in := func(ev session.Event) session.Event { ev.Turn, ev.Step = 1, 1; return ev }
	return []session.Event{
		{Type: session.TypeApprovalPolicy, Data: session.ApprovalPolicy{By: "approvals", Default: session.ActionAllow, Rules: []session.ApprovalRule{{Tool: "read_*", Action: session.ActionAsk, Reason: "reads need a yes"}}}},
		{Type: session.TypeTurnStart, Turn: 1},
		User("q"),
		{Type: session.TypeStepStart, Turn: 1, Step: 1},
		Assistant("", call("a", "read_file", `{"path":"x"}`), call("b", "calc", "{}"), call("c", "read_dir", "{}")), // 4
		in(session.Event{Type: session.TypeToolCall, Data: call("a", "read_file", `{"path":"x"}`)}),                 // 5
		in(session.Event{Type: session.TypeApprovalRequest, Data: session.ApprovalRequest{ID: "a", By: "approvals", Reason: "reads need a yes"}}),
		in(session.Event{Type: session.TypeToolCall, Data: call("b", "calc", "{}")}), // 7
		in(session.Event{Type: session.TypeToolStart, Data: session.ToolStart{ID: "b"}}),
		in(session.Event{Type: session.TypeToolResult, Sources: []int64{7}, Data: session.ToolResult{ID: "b", Name: "calc", Content: "2"}}),
		in(session.Event{Type: session.TypeToolCall, Data: call("c", "read_dir", "{}")}), // 10
		in(session.Event{Type: session.TypeApprovalRequest, Data: session.ApprovalRequest{ID: "c", By: "approvals"}}),
	}
}

// Decision is ann's approval/decision for call id of [SuspendedStep].
func Decision(id string, allow bool) session.Event {
	return session.Event{Type: session.TypeApprovalDecision, Turn: 1, Step: 1, Data: session.ApprovalDecision{ID: id, Allow: allow, By: "ann"}}
}
