package bus

import (
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

// Logger returns the owning plugin's named sub-logger.
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

// Plugin applies p with config in a new child fiber owned by c's fiber.
// The fiber stays pending until the services p requires are provided. The
// returned error is the apply error, if the plugin was applied and failed;
// the fiber is returned in every case but ErrNilPlugin and ErrDisposed.
func (c *Context) Plugin(p Plugin, config any) (*Fiber, error) {
	if isNil(p) {
		return nil, ErrNilPlugin
	}
	if c.root.disposed.Load() {
		return nil, ErrDisposed
	}
	parent := c.fiber
	f := &Fiber{
		root:   c.root,
		parent: parent,
		plugin: p,
		name:   p.Name(),
		state:  StatePending,
		config: config,
		gen:    1,
		filter: c.filter,
	}
	if in, ok := p.(Injector); ok {
		f.inject = in.Inject()
	}
	f.logger = c.root.logger.Named(f.name)
	f.ctx = &Context{root: c.root, fiber: f, filter: c.filter}
	if err := parent.addDisposer(func() { _ = f.Dispose() }, &f.ownerHandle); err != nil {
		return nil, fmt.Errorf("apply %q: %w", f.name, err)
	}
	c.root.track(f)
	c.root.mu.Lock()
	ready := len(c.root.missingLocked(f)) == 0
	c.root.mu.Unlock()
	if !ready {
		f.logger.Debug("waiting for services", "missing", f.Missing())
		return f, nil
	}
	if err := f.load(); err != nil {
		return f, err
	}
	return f, nil
}

// Effect runs fn now and registers the disposer it returns (which may be
// nil) with c's fiber, to run when the fiber is disposed or reloaded.
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
