package bus

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrDisposed is returned by operations on a disposed root or fiber.
	ErrDisposed = errors.New("bus: disposed")
	// ErrNilPlugin is returned when a nil plugin is applied.
	ErrNilPlugin = errors.New("bus: nil plugin")
	// ErrServiceMissing is returned when a service nobody provides is read.
	ErrServiceMissing = errors.New("bus: service missing")
	// ErrServiceDuplicate is returned when a service name is provided twice.
	ErrServiceDuplicate = errors.New("bus: service already provided")
	// ErrServiceUndeclared is returned when a plugin reads a service it did
	// not declare in its Inject.
	ErrServiceUndeclared = errors.New("bus: service not declared")
	// ErrConfigType is returned when a plugin receives a config of a type it
	// does not accept.
	ErrConfigType = errors.New("bus: config type")
	// ErrPanic wraps a recovered panic of a plugin or listener.
	ErrPanic = errors.New("bus: panic")
)

// PluginError attributes an error to the plugin whose code produced it.
// Op says what the bus was doing: "validate" (the config, before the
// plugin runs), "apply", "update", "dispose", or the name of the event
// being dispatched.
type PluginError struct {
	Plugin string
	Op     string
	Err    error
}

func (e *PluginError) Error() string {
	// A plugin's own errors often begin with its name: said once.
	return fmt.Sprintf("plugin %q: %s: %s", e.Plugin, e.Op, strings.TrimPrefix(e.Err.Error(), e.Plugin+": "))
}

func (e *PluginError) Unwrap() error { return e.Err }

// panicError turns a recovered value into an error wrapping ErrPanic.
func panicError(v any) error {
	if err, ok := v.(error); ok {
		return fmt.Errorf("%w: %w", ErrPanic, err)
	}
	return fmt.Errorf("%w: %v", ErrPanic, v)
}
