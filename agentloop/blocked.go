package agentloop

import (
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// ErrInvariant is matched (errors.Is) by a veto that reports a broken
// contract of the log or of a request — the invariants plugin's
// refusals — rather than a policy's decision. An append such a veto
// refuses ends the turn with reason "error", not "blocked": it is a bug
// to fix, not a decision to respect.
var ErrInvariant = errors.New("agentloop: invariant violated")

// BlockedError is the cause of a turn that ended with reason "blocked":
// a plugin's veto ([bus.Veto]) refused an event the loop appended, such
// as a tool/call or a tool/start. It unwraps to the plugin's reason.
type BlockedError struct {
	// Plugin is the plugin whose veto refused the event.
	Plugin string
	// Type is the type of the refused event.
	Type string
	// Err is the reason the plugin gave.
	Err error
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("blocked by plugin %q: %s refused: %v", e.Plugin, e.Type, e.Err)
}

func (e *BlockedError) Unwrap() error { return e.Err }

// vetoed returns the BlockedError of err, the failure of an append of
// typ, when a plugin's veto decided it; nil for any other failure (a
// store's, an invariant violation, a panicking listener).
func vetoed(typ string, err error) *BlockedError {
	var pe *bus.PluginError
	if !errors.As(err, &pe) || pe.Op != bus.Veto.Name() || errors.Is(err, ErrInvariant) || errors.Is(err, bus.ErrPanic) {
		return nil
	}
	return &BlockedError{Plugin: pe.Plugin, Type: typ, Err: pe.Err}
}

// failReason is the turn/end reason of a turn cut short by err.
func failReason(err error) string {
	var be *BlockedError
	if errors.As(err, &be) {
		return session.ReasonBlocked
	}
	return session.ReasonError
}
