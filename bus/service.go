package bus

import (
	"fmt"
	"sort"
	"strings"
)

// ServiceKey is what a plugin declares its dependencies with (see
// [Inject], [Requires], [Optional]): a [Service], a [ServiceSet], or a key
// type of a package's own that wraps one.
type ServiceKey interface {
	Name() string
}

// Service is a typed service key: the name plugins declare in [Inject]
// and the type of the value behind it.
type Service[T any] struct {
	name string
}

// NewService returns the key of the service called name.
func NewService[T any](name string) Service[T] { return Service[T]{name: name} }

// Name returns the service name.
func (s Service[T]) Name() string { return s.name }

// ServiceSet is the typed key of every service whose name starts with a
// prefix and whose value is a T, like the tools ("tool/<name>"). Declared
// as an Optional dependency, it lets a plugin read the current set with
// [ServiceSet.Lookup] without being reloaded when the set changes.
type ServiceSet[T any] struct {
	prefix string
}

// NewServiceSet returns the key of the services named prefix+something.
func NewServiceSet[T any](prefix string) ServiceSet[T] { return ServiceSet[T]{prefix: prefix} }

// Name returns the name a plugin declares to read the set: the prefix
// followed by "*".
func (s ServiceSet[T]) Name() string { return s.prefix + "*" }

// Key returns the key of the set's service called prefix+name.
func (s ServiceSet[T]) Key(name string) Service[T] { return NewService[T](s.prefix + name) }

// Lookup returns the set's available services, sorted by name (see
// [Lookup]).
func (s ServiceSet[T]) Lookup(c *Context) ([]Named[T], error) { return Lookup[T](c, s.prefix) }

type serviceEntry struct {
	value     any
	owner     *Fiber
	published bool
	// withdrawing is set when the withdrawal starts: the value can still be
	// read while dependents clean up, but no fiber may become active on it.
	withdrawing bool
}

// Provide makes v available under the service's name, owned by c's fiber:
// it is withdrawn when the fiber is disposed or reloaded, or when the
// returned function is called. It becomes visible to other plugins once
// the providing fiber is active. Providing a name that is already provided
// is an [ErrServiceDuplicate] error.
func (s Service[T]) Provide(c *Context, v T) (withdraw func(), err error) {
	return c.root.provide(c.fiber, s.name, v)
}

// Get returns the service's current value. A plugin context may read only
// services it declared in its [Inject]; the root context may read any. A
// context whose fiber is disposed reads nothing: [ErrDisposed], like every
// other use of it (cleanup that runs while the fiber disposes still reads).
func (s Service[T]) Get(c *Context) (T, error) {
	var zero T
	if c.fiber.disposed() {
		return zero, fmt.Errorf("get %q: %w", s.name, ErrDisposed)
	}
	if c.fiber.plugin != nil && !c.fiber.inject.declares(s.name) {
		return zero, fmt.Errorf("%w: plugin %q reads %q", ErrServiceUndeclared, c.fiber.name, s.name)
	}
	c.root.mu.Lock()
	e, ok := c.root.services[s.name]
	c.root.mu.Unlock()
	if !ok || !e.published {
		return zero, fmt.Errorf("%w: %q", ErrServiceMissing, s.name)
	}
	v, ok := e.value.(T)
	if !ok {
		return zero, fmt.Errorf("%w: service %q is %T, not %T", ErrConfigType, s.name, e.value, zero)
	}
	return v, nil
}

// Lookup returns every available service whose name starts with prefix and
// whose value is a T, sorted by name. A plugin must declare prefix+"*" (or
// each name) in its Inject. Like [Service.Get], it refuses a context whose
// fiber is disposed with [ErrDisposed].
func Lookup[T any](c *Context, prefix string) ([]Named[T], error) {
	if c.fiber.disposed() {
		return nil, fmt.Errorf("lookup %q: %w", prefix+"*", ErrDisposed)
	}
	if c.fiber.plugin != nil && !c.fiber.inject.declares(prefix+"*") {
		return nil, fmt.Errorf("%w: plugin %q reads %q", ErrServiceUndeclared, c.fiber.name, prefix+"*")
	}
	c.root.mu.Lock()
	var out []Named[T]
	for name, e := range c.root.services {
		if !e.published || !strings.HasPrefix(name, prefix) {
			continue
		}
		if v, ok := e.value.(T); ok {
			out = append(out, Named[T]{Name: name, Value: v})
		}
	}
	c.root.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Named is a service value with its name.
type Named[T any] struct {
	Name  string
	Value T
}

func (r *Root) provide(owner *Fiber, name string, v any) (func(), error) {
	if !owner.acceptsRegistrations() {
		return nil, fmt.Errorf("provide %q: %w", name, ErrDisposed)
	}
	r.mu.Lock()
	if e, ok := r.services[name]; ok {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: %q by %q (already by %q)", ErrServiceDuplicate, name, owner.name, e.owner.name)
	}
	e := &serviceEntry{value: v, owner: owner}
	r.services[name] = e
	publishNow := State(owner.stateSnapshot.Load()) == StateActive
	r.mu.Unlock()

	var handle *disposer
	withdraw := func() { r.withdraw(e, name) }
	if err := owner.addDisposer(withdraw, &handle); err != nil {
		r.mu.Lock()
		delete(r.services, name)
		r.mu.Unlock()
		return nil, fmt.Errorf("provide %q: %w", name, err)
	}
	if publishNow {
		r.publishNames(owner, []string{name})
	}
	return func() {
		handle.run()
		owner.removeDisposer(handle)
	}, nil
}

// publish makes the services of a newly active fiber visible.
func (r *Root) publish(owner *Fiber) {
	r.mu.Lock()
	var names []string
	for name, e := range r.services {
		if e.owner == owner && !e.published {
			names = append(names, name)
		}
	}
	r.mu.Unlock()
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	r.publishNames(owner, names)
}

func (r *Root) publishNames(owner *Fiber, names []string) {
	r.mu.Lock()
	for _, n := range names {
		if e, ok := r.services[n]; ok && e.owner == owner {
			e.published = true
		}
	}
	reload := r.dependentsLocked(names, owner)
	r.mu.Unlock()
	owner.logger.Debug("services provided", "services", names)
	// Optional dependents see the new service by reloading.
	for _, d := range reload {
		d.unload(StatePending)
	}
	r.startPending()
}

// withdraw removes a service: its dependents are unloaded first, then the
// service goes, then fibers that can still run (optional dependents) are
// applied again.
func (r *Root) withdraw(e *serviceEntry, name string) {
	r.mu.Lock()
	cur, ok := r.services[name]
	if !ok || cur != e {
		r.mu.Unlock()
		return
	}
	// Marked before the dependents are chosen, under the same lock: a
	// fiber still loading is not among them, and finds the service missing
	// when its apply returns (see load).
	e.withdrawing = true
	deps := []*Fiber(nil)
	if e.published {
		deps = r.dependentsLocked([]string{name}, e.owner)
	}
	r.mu.Unlock()
	for _, d := range deps {
		d.unload(StatePending)
	}
	r.mu.Lock()
	delete(r.services, name)
	r.mu.Unlock()
	e.owner.logger.Debug("service withdrawn", "service", name)
	if len(deps) > 0 && !r.disposed.Load() {
		r.startPending()
	}
}

// dependentsLocked returns the active fibers that must be unloaded when any
// of names changes, latest applied first. The owner and its ancestors are
// never their own dependents.
func (r *Root) dependentsLocked(names []string, owner *Fiber) []*Fiber {
	var out []*Fiber
	for i := len(r.fibers) - 1; i >= 0; i-- {
		f := r.fibers[i]
		if State(f.stateSnapshot.Load()) != StateActive || isAncestorOrSelf(f, owner) {
			continue
		}
		for _, n := range names {
			if f.inject.dependsOn(n) {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

func isAncestorOrSelf(f, of *Fiber) bool {
	for p := of; p != nil; p = p.parent {
		if p == f {
			return true
		}
	}
	return false
}
