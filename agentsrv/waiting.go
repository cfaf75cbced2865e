package agentsrv

import "github.com/vigil-run/vigil/session"

// Waiting is what an answer says of a turn that waits for approvals: its
// session and the calls no one decided yet, to be decided through the
// protocol (when it can ask), the API or the CLI.
type Waiting struct {
	Session string        `json:"session"`
	Calls   []WaitingCall `json:"calls"`
}

// WaitingCall is a call that waits for a decision.
type WaitingCall struct {
	Call      string `json:"call"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
}

// WaitingOf is what waits in session id, suspended on calls.
func WaitingOf(id string, calls []session.PendingCall) Waiting {
	w := Waiting{Session: id, Calls: []WaitingCall{}}
	for _, c := range (&session.Suspension{Calls: calls}).Undecided() {
		w.Calls = append(w.Calls, WaitingCall{Call: c.Call.ID, Tool: c.Call.Name, Arguments: c.Call.Arguments})
	}
	return w
}
