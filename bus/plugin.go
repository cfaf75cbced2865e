package bus

import (
	"fmt"
)

// Plugin is the smallest thing the bus can apply: a name and an apply
// function. Optional capabilities are the one-method interfaces
// [Injector] and [Reconfigurer], found by type assertion.
type Plugin interface {
	// Name identifies the plugin in errors and logs.
	Name() string
	// Apply registers the plugin's listeners, services and effects through
	// ctx. An error (or a panic) rolls back all it registered.
	Apply(ctx *Context, config any) error
}

// Injector is implemented by plugins that depend on services.
type Injector interface {
	Inject() Inject
}

// Reconfigurer is implemented by plugins that accept a new config without
// being reloaded. Plugins without it are disposed and re-applied.
type Reconfigurer interface {
	Reconfigure(ctx *Context, config any) error
}

// Inject declares the services a plugin reads. The plugin is applied only
// once every Required service is provided; it is reloaded when a Required
// or Optional service is withdrawn or provided. An Optional name ending in
// "*" matches every service with that prefix and never triggers a reload:
// such a plugin reads the current set when it needs it (see [Lookup]).
type Inject struct {
	Required []string
	Optional []string
}

func (in Inject) declares(name string) bool {
	for _, n := range in.Required {
		if n == name {
			return true
		}
	}
	for _, n := range in.Optional {
		if n == name || (len(n) > 0 && n[len(n)-1] == '*' && len(name) >= len(n)-1 && name[:len(n)-1] == n[:len(n)-1]) {
			return true
		}
	}
	return false
}

// dependsOn reports whether a change of the named service must reload the
// plugin (exact Required or Optional names; never wildcards).
func (in Inject) dependsOn(name string) bool {
	for _, n := range in.Required {
		if n == name {
			return true
		}
	}
	for _, n := range in.Optional {
		if n == name {
			return true
		}
	}
	return false
}

// Func is a plugin built from a function with a typed config. A nil config
// becomes the zero C; a config of another type is an [ErrConfigType] error.
type Func[C any] struct {
	// ID names the plugin.
	ID string
	// Deps are the services the plugin reads.
	Deps Inject
	// Run is the apply function.
	Run func(ctx *Context, config C) error
}

// PluginFunc is shorthand for a [Func] without dependencies.
func PluginFunc[C any](name string, run func(ctx *Context, config C) error) *Func[C] {
	return &Func[C]{ID: name, Run: run}
}

// Name implements [Plugin].
func (f *Func[C]) Name() string { return f.ID }

// Inject implements [Injector].
func (f *Func[C]) Inject() Inject { return f.Deps }

// Apply implements [Plugin].
func (f *Func[C]) Apply(ctx *Context, config any) error {
	c, err := ConfigAs[C](config)
	if err != nil {
		return err
	}
	if f.Run == nil {
		return nil
	}
	return f.Run(ctx, c)
}

// ConfigAs converts a config handed to [Plugin.Apply] to C: a C or *C is
// used as is, nil gives the zero C.
func ConfigAs[C any](config any) (C, error) {
	var zero C
	switch c := config.(type) {
	case nil:
		return zero, nil
	case C:
		return c, nil
	case *C:
		if c == nil {
			return zero, nil
		}
		return *c, nil
	default:
		return zero, fmt.Errorf("%w: got %T, want %T", ErrConfigType, config, zero)
	}
}

var (
	_ Plugin   = (*Func[struct{}])(nil)
	_ Injector = (*Func[struct{}])(nil)
)
