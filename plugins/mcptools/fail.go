package mcptools

import (
	"errors"
	"sync"

	"github.com/vigil-run/vigil/bus"
)

// failures holds, by fiber, why its plugin must refuse its next apply.
//
// The bus has no way for an active fiber to become failed on its own: a
// fiber fails when its apply does. So a plugin whose server went away
// records the cause and reloads its fiber with the config it has; the
// re-apply returns the cause, which leaves the fiber failed with it as
// [bus.Fiber.Err], undoes what the fiber registered, and is logged by the
// bus like any failed apply. A later config update applies the plugin
// again, which connects anew.
var failures sync.Map // *bus.Fiber → error

// fail fails f with cause. It must not run on a goroutine that f's
// disposers wait for.
func fail(f *bus.Fiber, cause error) {
	failures.Store(f, cause)
	if err := f.Update(f.Config()); errors.Is(err, bus.ErrDisposed) {
		failures.Delete(f)
	}
}

// failure returns, once, the cause recorded for f.
func failure(f *bus.Fiber) error {
	if v, ok := failures.LoadAndDelete(f); ok {
		return v.(error)
	}
	return nil
}
