package agentloop

import "github.com/vigil-run/vigil/bus"

// Status is an agent's lifecycle state as announced on agent/status.
type Status string

// Agent statuses. An agent starts idle; it is running while at least one
// turn is in progress; disposed is terminal.
const (
	StatusIdle     Status = "idle"
	StatusRunning  Status = "running"
	StatusDisposed Status = "disposed"
)

// StatusChange is the payload of agent/status: one transition of one
// agent. Legal transitions are idle → running, running → idle, and idle or
// running → disposed; the loop never announces a status the agent already
// has.
type StatusChange struct {
	// Agent is the agent instance's id (see [Agent.ID]); a new instance
	// (after a reload) has a new id.
	Agent string
	From  Status
	To    Status
}

// Subject implements bus.Subjecter: status changes are dispatched about
// their agent.
func (s StatusChange) Subject() any { return s.Agent }

// StatusEvent is the agent/status event. A listener that returns an error
// refuses the transition: the turn that wanted to start fails with it.
// The [Agent] emits it; the invariants plugin checks the transitions.
var StatusEvent = bus.NewEvent[StatusChange]("agent/status")
