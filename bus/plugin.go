package bus

import (
	"fmt"
	"reflect"
)

// Plugin is the smallest thing the bus can apply: a name and an apply
// function. Optional capabilities are the one-method interfaces
// [Injector], [ConfigValidator] and [Reconfigurer], found by type
// assertion.
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

// Validator is implemented by configs that check their values. The bus
// calls it before every apply and reconfigure, whoever applies the plugin
// (the config loader or a Go program calling [Context.Plugin]), so a
// plugin's apply function never sees a config that fails it. A Validate
// method on *C counts for a config passed as a C value.
type Validator interface {
	Validate() error
}

// ConfigValidator is implemented by plugins that check a config the way
// they will read it: a [Func] converts it with [ConfigAs] first, so that a
// nil config is checked as the zero C it is applied as. The bus calls it
// instead of validating the config value itself. Its error fails the
// apply, or refuses the update, with a [*PluginError] whose Op is
// "validate", before the plugin runs.
type ConfigValidator interface {
	ValidateConfig(config any) error
}

// Inject declares the services a plugin reads, by their keys. The plugin
// is applied only once every Required service is provided; it is reloaded
// when a Required or Optional service is withdrawn or provided. An
// Optional [ServiceSet] matches every service of the set and never
// triggers a reload: such a plugin reads the current set when it needs it
// (see [ServiceSet.Lookup]).
type Inject struct {
	Required []ServiceKey
	Optional []ServiceKey
}

// deps is an Inject resolved to names, once, when the plugin is applied.
type deps struct {
	required, optional []string
}

func (in Inject) resolve() deps {
	var d deps
	for _, k := range in.Required {
		d.required = append(d.required, k.Name())
	}
	for _, k := range in.Optional {
		d.optional = append(d.optional, k.Name())
	}
	return d
}

func (d deps) declares(name string) bool {
	for _, n := range d.required {
		if n == name {
			return true
		}
	}
	for _, n := range d.optional {
		if n == name || (len(n) > 0 && n[len(n)-1] == '*' && len(name) >= len(n)-1 && name[:len(n)-1] == n[:len(n)-1]) {
			return true
		}
	}
	return false
}

// dependsOn reports whether a change of the named service must reload the
// plugin (exact Required or Optional names; never wildcards).
func (d deps) dependsOn(name string) bool {
	for _, n := range d.required {
		if n == name {
			return true
		}
	}
	for _, n := range d.optional {
		if n == name {
			return true
		}
	}
	return false
}

// Func is a plugin built from a function with a typed config. A nil config
// becomes the zero C; a config of another type is an [ErrConfigType] error.
// When C or *C is a [Validator], the bus validates the config before Run
// sees it.
type Func[C any] struct {
	// ID names the plugin.
	ID string
	// Deps are the services the plugin reads.
	Deps Inject
	// Run is the apply function.
	Run func(ctx *Context, config C) error
}

// FuncOption configures a plugin built by [PluginFunc] or [RegisterFunc].
type FuncOption func(*Inject)

// Requires declares services the plugin cannot run without: it stays
// pending until every one is provided.
func Requires(keys ...ServiceKey) FuncOption {
	return func(in *Inject) { in.Required = append(in.Required, keys...) }
}

// Optional declares services the plugin reads when they are there: it is
// reloaded when one is provided or withdrawn (a [ServiceSet] is read at
// each use instead; see [Inject]).
func Optional(keys ...ServiceKey) FuncOption {
	return func(in *Inject) { in.Optional = append(in.Optional, keys...) }
}

// PluginFunc returns the plugin named name that applies run, with the
// dependencies opts declare.
func PluginFunc[C any](name string, run func(ctx *Context, config C) error, opts ...FuncOption) *Func[C] {
	f := &Func[C]{ID: name, Run: run}
	for _, o := range opts {
		o(&f.Deps)
	}
	return f
}

// Name implements [Plugin].
func (f *Func[C]) Name() string { return f.ID }

// Inject implements [Injector].
func (f *Func[C]) Inject() Inject { return f.Deps }

// ValidateConfig implements [ConfigValidator] with [ValidateAs].
func (f *Func[C]) ValidateConfig(config any) error { return ValidateAs[C](config) }

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

// ValidateAs converts config as [ConfigAs] does and validates the C it
// gives, when C or *C is a [Validator]; a nil pointer C is not validated
// (it is the plugin's default). A plugin type of its own that reads its
// config with ConfigAs implements [ConfigValidator] with it.
func ValidateAs[C any](config any) error {
	c, err := ConfigAs[C](config)
	if err != nil {
		return err
	}
	return validate(&c)
}

// validate calls the Validate method of *p or of p, if either has one.
func validate[C any](p *C) error {
	if v, ok := any(*p).(Validator); ok {
		if rv := reflect.ValueOf(*p); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return nil
		}
		return v.Validate()
	}
	if v, ok := any(p).(Validator); ok {
		return v.Validate()
	}
	return nil
}

// validateConfig checks config before p is applied with it (see
// [ConfigValidator] and [Validator]). A panicking Validate is an error.
func validateConfig(p Plugin, config any) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError(v)
		}
	}()
	if cv, ok := p.(ConfigValidator); ok {
		return cv.ValidateConfig(config)
	}
	if config == nil {
		return nil
	}
	if v, ok := config.(Validator); ok {
		if rv := reflect.ValueOf(config); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return nil
		}
		return v.Validate()
	}
	// A value whose Validate has a pointer receiver: validate a copy.
	rv := reflect.ValueOf(config)
	cp := reflect.New(rv.Type())
	cp.Elem().Set(rv)
	if v, ok := cp.Interface().(Validator); ok {
		return v.Validate()
	}
	return nil
}

var (
	_ Plugin          = (*Func[struct{}])(nil)
	_ Injector        = (*Func[struct{}])(nil)
	_ ConfigValidator = (*Func[struct{}])(nil)
)
