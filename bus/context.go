package bus

import (
	"context"
	"fmt"
	"reflect"

	"github.com/hashicorp/go-hclog"
)

// Context is a plugin's handle on the bus: it is bound to the plugin's
// fiber, which owns everything registered through it, and may carry a
// subject filter (see [Context.Scope]). A Context is cheap to copy around
// and safe for concurrent use.
type Context struct {
	root   *Root
	fiber  *Fiber
	filter func(subject any) bool
}

// Subjecter is implemented by payloads that name the subject of their
// dispatch (a session, an agent). Scoped listeners see only dispatches
// whose subject passes their filter.
type Subjecter interface {
	Subject() any
}

// Root returns the root this context belongs to.
func (c *Context) Root() *Root { return c.root }

// Fiber returns the fiber that owns what is registered through c.
func (c *Context) Fiber() *Fiber { return c.fiber }

// Done returns a channel closed when the disposal of c's fiber is
// requested: by [Fiber.Dispose] on it or on an ancestor (the root
// included). It closes at the request, before any disposer runs, so an
// apply still running learns it should stop; a reload or a withdrawn
// service does not close it (the fiber comes back), and undoing what one
// application set up is the job of its effects. Shorthand for
// c.Context().Done().
func (c *Context) Done() <-chan struct{} { return c.fiber.life.Done() }

// Context returns a [context.Context] cancelled when [Context.Done] closes,
// with cause [ErrDisposed]: the lifetime of c's fiber, for the calls an
// apply or a listener makes on the fiber's behalf.
func (c *Context) Context() context.Context { return c.fiber.life }

// Logger returns the owning plugin's named sub-logger (the nearest named
// ancestor's, for an anonymous plugin).
func (c *Context) Logger() hclog.Logger { return c.fiber.logger }

// Scope returns a context on the same fiber whose listeners only receive
// dispatches whose subject passes filter (and, when c is already scoped,
// c's filter too). Dispatches whose payload names no subject pass only
// listeners without a filter.
func (c *Context) Scope(filter func(subject any) bool) *Context {
	if filter == nil {
		return c
	}
	parent := c.filter
	combined := filter
	if parent != nil {
		combined = func(s any) bool { return parent(s) && filter(s) }
	}
	return &Context{root: c.root, fiber: c.fiber, filter: combined}
}

// Receives reports whether a listener registered through c receives a
// dispatch about subject (nil: a dispatch that names none), as its scope
// decides (see [Context.Scope]). A plugin that keeps a listener in a fiber
// of its own, one that outlives c's reloads, applies c's scope with it.
func (c *Context) Receives(subject any) bool {
	return c.filter == nil || receives(c.filter, subject)
}

// Plugin applies p with config in a new child fiber owned by c's fiber.
// The config is validated first (see [Validator]): an invalid one leaves
// the fiber failed with a [*PluginError] whose Op is "validate", and p does
// not run. The fiber then stays pending until the services p requires are
// provided. The returned error is the validation or apply error, if the
// plugin failed; the fiber is returned in every case but ErrNilPlugin and
// ErrDisposed.
func (c *Context) Plugin(p Plugin, config any) (*Fiber, error) {
	return c.plugin(p, config, "")
}

// PluginAs applies p like [Context.Plugin], its log lines under logName
// rather than p's name: a composition applies each entry under its id,
// so that two entries of one plugin (two MCP servers) log apart. Errors
// still name the plugin.
func (c *Context) PluginAs(logName string, p Plugin, config any) (*Fiber, error) {
	return c.plugin(p, config, logName)
}

func (c *Context) plugin(p Plugin, config any, logName string) (*Fiber, error) {
	if isNil(p) {
		return nil, ErrNilPlugin
	}
	if c.root.disposed.Load() {
		return nil, ErrDisposed
	}
	parent := c.fiber
	// An anonymous plugin goes by its nearest named ancestor, as in
	// Cordis, so errors and logs never name "".
	name, logger := p.Name(), parent.logger
	if name == "" {
		name = parent.name
	} else {
		logger = c.root.logger.Named(name)
	}
	if logName != "" {
		logger = c.root.logger.Named(logName)
	}
	f := newFiber(c.root, parent, p, name, logger)
	if logName != "" {
		f.id = logName
	}
	f.state = StatePending
	f.config = config
	f.gen = 1
	f.filter = c.filter
	if in, ok := p.(Injector); ok {
		f.inject = in.Inject().resolve()
	}
	f.ctx = &Context{root: c.root, fiber: f, filter: c.filter}
	// Validation is part of applying, whoever applies the plugin: an
	// invalid config fails the fiber before the plugin runs, and before it
	// would wait for services (see [ConfigValidator]). Config updates are
	// validated by Update, so every config load sees has passed.
	var invalid *PluginError
	if err := validateConfig(p, config); err != nil {
		invalid = &PluginError{Plugin: f.name, Op: "validate", Err: err}
		f.err = invalid
		f.setState(StateFailed)
	}
	if err := parent.addDisposer(func() { _ = f.Dispose() }, &f.ownerHandle); err != nil {
		f.requestEnd()
		return nil, fmt.Errorf("apply %q: %w", f.name, err)
	}
	c.root.track(f)
	if invalid != nil {
		f.logger.Error("invalid config", "error", invalid.Err)
		return f, invalid
	}
	if err := f.load(); err != nil {
		return f, err
	}
	return f, nil
}

// Effect runs fn now and registers the disposer it returns (which may be
// nil) with c's fiber, to run when the fiber is disposed or reloaded. Once
// the fiber's disposal is requested (see [Context.Done]) Effect refuses
// with [ErrDisposed] without running fn; if the request comes while fn
// runs, the disposer fn returns is run at once and Effect refuses too, so
// nothing fn set up outlives the fiber.
func (c *Context) Effect(fn func() (dispose func())) error {
	if !c.fiber.acceptsRegistrations() {
		return ErrDisposed
	}
	d := fn()
	if d == nil {
		return nil
	}
	if err := c.fiber.addDisposer(d, nil); err != nil {
		d()
		return err
	}
	return nil
}

// isNil reports whether p is nil or a typed nil pointer, whose Name would
// panic.
func isNil(p Plugin) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
