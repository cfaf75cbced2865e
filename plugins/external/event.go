package external

import (
	"encoding/json"

	"github.com/vigil-run/vigil/bus"
)

// Emission is the payload of [Emitted]: an event a plugin emitted through
// the Host service.
type Emission struct {
	// Plugin is the emitting plugin's name.
	Plugin string
	// Name names the event within the plugin, like "units/converted".
	Name string
	// Session, when set, is the session the event is about.
	Session string
	// Data is the payload, as JSON.
	Data json.RawMessage
}

// Subject implements bus.Subjecter: an emission about a session reaches
// listeners scoped to that session; one without a session only unscoped
// listeners.
func (e *Emission) Subject() any {
	if e.Session == "" {
		return nil
	}
	return e.Session
}

// Emitted is the external/event bus event: listeners see every event an
// out-of-process plugin emits, and their error is returned to the plugin.
var Emitted = bus.NewEvent[*Emission]("external/event")
