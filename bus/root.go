package bus

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// Root owns one listener table and one service table, and the root fiber
// that every plugin descends from. Its methods are safe for concurrent use.
type Root struct {
	logger hclog.Logger

	mu       sync.Mutex
	slots    atomic.Pointer[[]*eventSlot] // indexed by event id
	services map[string]*serviceEntry
	fibers   []*Fiber // live fibers in creation order
	disposed atomic.Bool

	fiber *Fiber
}

// Option configures a [Root].
type Option func(*Root)

// WithLogger sets the root logger; plugins get named sub-loggers of it.
// The default discards everything.
func WithLogger(l hclog.Logger) Option {
	return func(r *Root) {
		if l != nil {
			r.logger = l
		}
	}
}

// New returns a root whose root fiber is already active.
func New(opts ...Option) *Root {
	r := &Root{
		logger:   hclog.NewNullLogger(),
		services: map[string]*serviceEntry{},
	}
	for _, o := range opts {
		o(r)
	}
	empty := []*eventSlot{}
	r.slots.Store(&empty)
	r.fiber = newFiber(r, nil, nil, "root", r.logger)
	r.fiber.setState(StateActive)
	r.fiber.ctx = &Context{root: r, fiber: r.fiber}
	return r
}

// Context returns the root context. Listeners and services registered
// through it live until the root is disposed.
func (r *Root) Context() *Context { return r.fiber.ctx }

// Dispose disposes every fiber, last applied first, then refuses further
// dispatches with [ErrDisposed]. Calling it again does nothing.
func (r *Root) Dispose() error {
	if r.disposed.Load() {
		return nil
	}
	err := r.fiber.Dispose()
	r.disposed.Store(true)
	return err
}

// Waiting describes a fiber that is pending on services.
type Waiting struct {
	Plugin  string
	Missing []string
}

// Pending lists the fibers waiting for required services and what they
// miss, in the order they were applied.
func (r *Root) Pending() []Waiting {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Waiting
	for _, f := range r.fibers {
		// The atomic snapshot spares taking every fiber's lock under r.mu.
		if State(f.stateSnapshot.Load()) != StatePending {
			continue
		}
		out = append(out, Waiting{Plugin: f.name, Missing: r.missingLocked(f)})
	}
	return out
}

func (r *Root) missingLocked(f *Fiber) []string {
	var missing []string
	for _, name := range f.inject.required {
		if e, ok := r.services[name]; !ok || !e.published || e.withdrawing {
			missing = append(missing, name)
		}
	}
	return missing
}

func (r *Root) track(f *Fiber) {
	r.mu.Lock()
	r.fibers = append(r.fibers, f)
	r.mu.Unlock()
}

func (r *Root) untrack(f *Fiber) {
	r.mu.Lock()
	if i := slices.Index(r.fibers, f); i >= 0 {
		r.fibers = slices.Delete(r.fibers, i, i+1)
	}
	r.mu.Unlock()
}

// startPending applies every pending fiber whose required services are all
// available, in creation order, until no more can start.
func (r *Root) startPending() {
	for {
		var next *Fiber
		r.mu.Lock()
		for _, f := range r.fibers {
			if State(f.stateSnapshot.Load()) == StatePending && !f.parkedByParent() && !f.ending() && len(r.missingLocked(f)) == 0 {
				next = f
				break
			}
		}
		r.mu.Unlock()
		if next == nil || r.disposed.Load() {
			return
		}
		_ = next.load()
	}
}
