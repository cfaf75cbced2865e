package agentloop

import (
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// Prepare is the payload of agent/prepare, which the loop emits before
// each turn, outside any turn, with the session claimed by the turn about
// to start. It is the seam for changing the log between turns (the
// compaction plugin summarizes there): listeners may append to the
// session, and the turn's requests are built from the log as they leave
// it. A listener error fails the run before turn/start.
type Prepare struct {
	// Agent is the id of the agent about to run the turn.
	Agent   string
	Session *live.Session
	// Provider is the provider the turn will use, for one-shot calls
	// (see [Complete]).
	Provider Provider
	// Header is the request header the turn's first step will use.
	Header session.Header
}

// Subject implements bus.Subjecter: the event is about the session.
func (p *Prepare) Subject() any { return p.Session.ID() }

// TurnPrepare is the agent/prepare event, emitted by [Agent.Run] before
// each turn and outside it, for plugins that append to the session first
// (compaction).
var TurnPrepare = bus.NewEvent[*Prepare]("agent/prepare")
