package bus

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// State is a fiber's lifecycle state.
type State int32

// Fiber states. A fiber starts pending, loads, and ends active or failed;
// disposal moves it through unloading to disposed. A fiber whose required
// service is withdrawn goes from active back to pending.
const (
	StatePending State = iota
	StateLoading
	StateActive
	StateFailed
	StateUnloading
	StateDisposed
)

func (s State) String() string {
	switch s {
	case StatePending:
		return "pending"
	case StateLoading:
		return "loading"
	case StateActive:
		return "active"
	case StateFailed:
		return "failed"
	case StateUnloading:
		return "unloading"
	case StateDisposed:
		return "disposed"
	}
	return "unknown"
}

// Fiber is one application of a plugin: it owns everything the plugin
// registered and undoes it, last in first out, on dispose or reload.
type Fiber struct {
	root   *Root
	parent *Fiber
	plugin Plugin
	name   string
	inject Inject
	logger hclog.Logger
	ctx    *Context
	filter func(any) bool

	// ownerHandle is this fiber's entry in its parent's disposers.
	ownerHandle *disposer

	mu               sync.Mutex
	state            State
	stateSnapshot    atomic.Int32
	config           any
	gen              uint64 // generation of config
	disposers        []*disposer
	err              error
	disposeRequested bool
	// disposing is set once Dispose starts: unlike a reload, which also
	// passes through unloading, the fiber will not come back.
	disposing bool
}

type disposer struct {
	once sync.Once
	fn   func()
}

func (d *disposer) run() { d.once.Do(d.fn) }

// Name returns the plugin's name.
func (f *Fiber) Name() string { return f.name }

// State returns the fiber's current state.
func (f *Fiber) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// Err returns the error that left the fiber failed, or nil.
func (f *Fiber) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Context returns the context bound to the fiber.
func (f *Fiber) Context() *Context { return f.ctx }

// Config returns the latest config handed to the fiber.
func (f *Fiber) Config() any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.config
}

// Generation returns the generation of the latest config: 1 for the
// config the plugin was applied with, plus one per [Fiber.Update].
func (f *Fiber) Generation() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

// Missing lists the required services the fiber is waiting for.
func (f *Fiber) Missing() []string {
	f.root.mu.Lock()
	defer f.root.mu.Unlock()
	return f.root.missingLocked(f)
}

func (f *Fiber) setState(s State) {
	f.state = s
	f.stateSnapshot.Store(int32(s))
}

// parkedByParent reports whether the parent cannot host a load now.
func (f *Fiber) parkedByParent() bool {
	if f.parent == nil {
		return false
	}
	s := State(f.parent.stateSnapshot.Load())
	return s != StateActive && s != StateLoading
}

func (f *Fiber) acceptsRegistrations() bool {
	s := State(f.stateSnapshot.Load())
	return s == StateActive || s == StateLoading
}

func (f *Fiber) addDisposer(fn func(), handle **disposer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != StateActive && f.state != StateLoading {
		return ErrDisposed
	}
	d := &disposer{fn: fn}
	f.disposers = append(f.disposers, d)
	if handle != nil {
		*handle = d
	}
	return nil
}

func (f *Fiber) removeDisposer(d *disposer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := slices.Index(f.disposers, d); i >= 0 {
		f.disposers = slices.Delete(f.disposers, i, i+1)
	}
}

// runDisposers runs and forgets every disposer, last registered first,
// one at a time. A panicking disposer is logged; the rest still run.
func (f *Fiber) runDisposers() {
	f.mu.Lock()
	ds := f.disposers
	f.disposers = nil
	f.mu.Unlock()
	for i := len(ds) - 1; i >= 0; i-- {
		func() {
			defer func() {
				if v := recover(); v != nil {
					f.logger.Error("disposer panicked", "panic", v)
				}
			}()
			ds[i].run()
		}()
	}
}

func (f *Fiber) callApply(cfg any) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError(v)
		}
	}()
	return f.plugin.Apply(f.ctx, cfg)
}

func (f *Fiber) callReconfigure(r Reconfigurer, cfg any) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError(v)
		}
	}()
	return r.Reconfigure(f.ctx, cfg)
}

// load applies the plugin. On failure everything it registered is rolled
// back and the fiber is left failed. Config updates that arrived while it
// was loading are applied afterwards.
func (f *Fiber) load() error {
	f.mu.Lock()
	if f.state != StatePending && f.state != StateFailed {
		f.mu.Unlock()
		return nil
	}
	f.setState(StateLoading)
	f.err = nil
	cfg, gen := f.config, f.gen
	f.mu.Unlock()

	f.logger.Debug("applying")
	if err := f.callApply(cfg); err != nil {
		f.runDisposers()
		perr := &PluginError{Plugin: f.name, Op: "apply", Err: err}
		f.mu.Lock()
		f.setState(StateFailed)
		f.err = perr
		retry := f.gen != gen && !f.disposeRequested
		dispose := f.disposeRequested
		f.mu.Unlock()
		f.logger.Error("apply failed", "error", err)
		switch {
		case dispose:
			_ = f.Dispose()
		case retry:
			return f.load()
		}
		return perr
	}

	f.mu.Lock()
	if f.disposeRequested {
		f.setState(StateActive)
		f.mu.Unlock()
		return f.Dispose()
	}
	f.setState(StateActive)
	updated := f.gen != gen
	f.mu.Unlock()

	f.root.publish(f)
	if updated {
		return f.applyUpdate()
	}
	return nil
}

// Update hands the fiber a new config. A plugin implementing
// [Reconfigurer] receives it in place; any other is reloaded. An update
// that arrives while the plugin is loading is applied right after the load
// (never lost); one that arrives while it is pending or failed is used for
// its next load, which a failed fiber attempts at once.
func (f *Fiber) Update(config any) error {
	if f.plugin == nil {
		return fmt.Errorf("update: the root fiber has no plugin: %w", ErrNilPlugin)
	}
	f.mu.Lock()
	// A fiber unloading for a reload or a withdrawn service keeps the
	// config for its next load; only a disposed fiber refuses it.
	if f.state == StateDisposed || f.disposing || f.disposeRequested {
		f.mu.Unlock()
		return ErrDisposed
	}
	f.config = config
	f.gen++
	f.mu.Unlock()
	return f.applyUpdate()
}

func (f *Fiber) applyUpdate() error {
	f.mu.Lock()
	state, cfg := f.state, f.config
	f.mu.Unlock()
	switch state {
	case StateFailed:
		return f.load()
	case StateActive:
		if r, ok := f.plugin.(Reconfigurer); ok {
			if err := f.callReconfigure(r, cfg); err != nil {
				f.logger.Error("reconfigure failed", "error", err)
				return &PluginError{Plugin: f.name, Op: "update", Err: err}
			}
			return nil
		}
		f.unload(StatePending)
		f.root.mu.Lock()
		ready := len(f.root.missingLocked(f)) == 0
		f.root.mu.Unlock()
		if ready {
			return f.load()
		}
		return nil
	default:
		return nil
	}
}

// unload undoes what the fiber registered and leaves it in state to, or
// disposed if Dispose was called meanwhile.
func (f *Fiber) unload(to State) {
	f.mu.Lock()
	if f.state != StateActive {
		f.mu.Unlock()
		return
	}
	f.setState(StateUnloading)
	f.mu.Unlock()
	f.logger.Debug("unloading")
	f.runDisposers()
	f.mu.Lock()
	if f.disposing {
		f.mu.Unlock()
		f.finishDispose()
		return
	}
	f.setState(to)
	f.mu.Unlock()
}

// Dispose undoes everything the fiber registered, last first, and leaves
// it disposed. Disposing a disposed fiber does nothing. A fiber disposed
// while loading is disposed as soon as its apply returns, one disposed
// while unloading for a reload as soon as the unload ends.
func (f *Fiber) Dispose() error {
	f.mu.Lock()
	switch {
	case f.state == StateDisposed || f.disposing:
		f.mu.Unlock()
		return nil
	case f.state == StateUnloading:
		f.disposing = true
		f.mu.Unlock()
		return nil
	case f.state == StateLoading:
		f.disposeRequested = true
		f.mu.Unlock()
		return nil
	}
	f.disposing = true
	f.setState(StateUnloading)
	f.mu.Unlock()
	f.runDisposers()
	f.finishDispose()
	return nil
}

func (f *Fiber) finishDispose() {
	f.mu.Lock()
	f.setState(StateDisposed)
	f.mu.Unlock()
	if f.parent != nil {
		f.root.untrack(f)
		if f.ownerHandle != nil {
			f.parent.removeDisposer(f.ownerHandle)
		}
	}
	f.logger.Debug("disposed")
}

// Fail undoes everything an active fiber registered and leaves it failed
// with err, as if its apply had failed: for plugins whose resource dies
// after apply (a plugin process that crashed, a server that went away).
// [Fiber.Err] then reports err, and a later [Fiber.Update] applies the
// plugin again. Failing a fiber that is not active does nothing.
func (f *Fiber) Fail(err error) {
	f.mu.Lock()
	if f.state != StateActive {
		f.mu.Unlock()
		return
	}
	f.setState(StateUnloading)
	f.mu.Unlock()
	f.logger.Error("plugin failed", "error", err)
	f.runDisposers()
	f.mu.Lock()
	f.setState(StateFailed)
	f.err = &PluginError{Plugin: f.name, Op: "run", Err: err}
	f.mu.Unlock()
}
