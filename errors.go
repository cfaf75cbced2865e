package vigil

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Errors callers branch on with errors.Is.
var (
	// ErrNotFound: the store holds no session with that id. It is
	// session.ErrNotFound.
	ErrNotFound = session.ErrNotFound
	// ErrBusy: a turn is running on the session, in another process (the
	// error names the holder of the lease) or in this runtime. It is
	// session.ErrLocked.
	ErrBusy = session.ErrLocked
	// ErrNoService: no plugin of the composition provides a service a
	// call needs (no store for sessions, no agent for turns). It is
	// bus.ErrServiceMissing.
	ErrNoService = bus.ErrServiceMissing
	// ErrSuspended: the turn waits for a person's decision on a tool
	// call (see [Runtime.Pending], [Runtime.Decide]); its result has the
	// calls in Pending. A new prompt on such a session is refused with it.
	// It is agentloop.ErrSuspended.
	ErrSuspended = agentloop.ErrSuspended
	// ErrNothingToContinue: a continuation ([TurnOptions].Continue) was
	// asked of a session whose last turn did not end interrupted (or of
	// no session). It is agentloop.ErrNothingToContinue.
	ErrNothingToContinue = agentloop.ErrNothingToContinue
	// ErrWaiting: a plugin of the composition waits for a service that
	// no plugin provides; [Open] fails with a [*WaitingError].
	ErrWaiting = errors.New("vigil: a plugin waits for a missing service")
)

// WaitingError is the error of an [Open] whose composition leaves plugins
// waiting for services no plugin provides (a provider missing or
// disabled). It matches [ErrWaiting].
type WaitingError struct {
	// Source names the composition (its file).
	Source  string
	Waiting []bus.Waiting
}

func (e *WaitingError) Error() string {
	parts := make([]string, 0, len(e.Waiting))
	for _, w := range e.Waiting {
		parts = append(parts, fmt.Sprintf("%s waits for %s", w.Plugin, strings.Join(w.Missing, ", ")))
	}
	return fmt.Sprintf("%s: %s (is a plugin that provides it missing or disabled?)", e.Source, strings.Join(parts, "; "))
}

// Is makes every WaitingError match ErrWaiting.
func (e *WaitingError) Is(target error) bool { return target == ErrWaiting }

// missingError names the service no plugin provides; it unwraps to the
// bus's error, which matches ErrNoService.
type missingError struct {
	source, service string
	err             error
}

func (e *missingError) Error() string {
	return fmt.Sprintf("%s: no plugin provides %q", e.source, e.service)
}

func (e *missingError) Unwrap() error { return e.err }
