package bus

import (
	"context"
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
	id     string // the name it was applied as (PluginAs), else name
	inject deps
	logger hclog.Logger
	ctx    *Context
	filter func(any) bool

	// ownerHandle is this fiber's entry in its parent's disposers.
	ownerHandle *disposer

	// life is cancelled, with cause ErrDisposed, when the disposal of the
	// fiber or of an ancestor is requested.
	life context.Context
	end  context.CancelCauseFunc

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

// Name returns the plugin's name; an anonymous plugin (whose Name is "")
// goes by the name of its nearest named ancestor, "root" at the top.
func (f *Fiber) Name() string { return f.name }

// ID returns the name the fiber was applied as with [Context.PluginAs]
// (a composition's entry id), else its name.
func (f *Fiber) ID() string { return f.id }

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

// newFiber returns a fiber for p (nil for the root fiber). Its life
// derives from its parent's: the disposal of a fiber is requested for its
// whole subtree at once, before the disposers reach the children.
func newFiber(r *Root, parent *Fiber, p Plugin, name string, logger hclog.Logger) *Fiber {
	f := &Fiber{root: r, parent: parent, plugin: p, name: name, id: name, logger: logger}
	base := context.Background()
	if parent != nil {
		base = parent.life
	}
	f.life, f.end = context.WithCancelCause(base)
	return f
}

// requestEnd tells whoever watches the fiber's context that the fiber is
// going away, which makes it refuse new registrations.
func (f *Fiber) requestEnd() { f.end(ErrDisposed) }

// ending reports whether the disposal of the fiber or an ancestor was
// requested.
func (f *Fiber) ending() bool { return f.life.Err() != nil }

// disposed reports whether the fiber is disposed, its disposers all run.
func (f *Fiber) disposed() bool {
	return State(f.stateSnapshot.Load()) == StateDisposed
}

// acceptsRegistrations reports whether the fiber takes new listeners,
// services, effects and children: only while loading or active, and not
// once its disposal was requested.
func (f *Fiber) acceptsRegistrations() bool {
	s := State(f.stateSnapshot.Load())
	return (s == StateActive || s == StateLoading) && !f.ending()
}

func (f *Fiber) addDisposer(fn func(), handle **disposer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != StateActive && f.state != StateLoading || f.ending() {
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

// load applies the plugin if its required services are all available,
// and otherwise leaves it pending. On failure everything it registered is
// rolled back and the fiber is left failed. A required service lost while
// the plugin was loading (withdrawn, or its provider disposed) sends the
// fiber back to pending, its apply undone, whether the apply succeeded or
// failed: it is applied again when the service returns. Config updates
// that arrived while it was loading are applied afterwards.
func (f *Fiber) load() error {
	f.mu.Lock()
	// A fiber whose disposal (or an ancestor's) was requested is not
	// applied again: everything it registered would be refused.
	if f.state != StatePending && f.state != StateFailed || f.ending() {
		f.mu.Unlock()
		return nil
	}
	f.root.mu.Lock()
	missing := f.root.missingLocked(f)
	if len(missing) > 0 {
		// Pending before the root lock is released: a service published
		// right after this check finds the fiber where startPending looks.
		f.setState(StatePending)
		f.err = nil
		f.root.mu.Unlock()
		f.mu.Unlock()
		f.logger.Debug("waiting for services", "missing", missing)
		return nil
	}
	f.root.mu.Unlock()
	f.setState(StateLoading)
	f.err = nil
	cfg, gen := f.config, f.gen
	f.mu.Unlock()

	f.logger.Debug("applying")
	if err := f.callApply(cfg); err != nil {
		f.runDisposers()
		perr := &PluginError{Plugin: f.name, Op: "apply", Err: err}
		f.mu.Lock()
		dispose := f.disposeRequested
		f.root.mu.Lock()
		lost := !dispose && len(f.root.missingLocked(f)) > 0
		f.root.mu.Unlock()
		if lost {
			f.setState(StatePending)
		} else {
			f.setState(StateFailed)
			f.err = perr
		}
		retry := f.gen != gen && !dispose && !lost
		f.mu.Unlock()
		f.logger.Error("apply failed", "error", err)
		switch {
		case dispose:
			_ = f.Dispose()
		case lost:
			f.logger.Debug("required service lost while loading: waiting for it")
			f.root.startPending()
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
	// The check and the move to active are one step under the root lock:
	// a withdrawal either sees the fiber active (and unloads it as a
	// dependent) or the fiber sees the service going.
	f.root.mu.Lock()
	if len(f.root.missingLocked(f)) > 0 {
		f.setState(StateUnloading)
		f.root.mu.Unlock()
		f.mu.Unlock()
		f.logger.Debug("required service lost while loading: waiting for it")
		if f.finishUnload(StatePending) {
			// The service may have returned while the fiber was unloading,
			// when nothing could start it.
			f.root.startPending()
		}
		return nil
	}
	f.setState(StateActive)
	f.root.mu.Unlock()
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
// its next load, which a failed fiber attempts at once. A config that
// fails validation (see [ConfigValidator]) is refused with a
// [*PluginError] whose Op is "validate": the fiber keeps its config and
// its state, so an active plugin keeps running.
func (f *Fiber) Update(config any) error {
	if f.plugin == nil {
		return fmt.Errorf("update: the root fiber has no plugin: %w", ErrNilPlugin)
	}
	if err := validateConfig(f.plugin, config); err != nil {
		return &PluginError{Plugin: f.name, Op: "validate", Err: err}
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
		return f.load()
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
	f.finishUnload(to)
}

// finishUnload runs the disposers of an unloading fiber and leaves it in
// state to, or disposed if Dispose was called meanwhile; it reports
// whether the fiber reached to.
func (f *Fiber) finishUnload(to State) bool {
	f.runDisposers()
	f.mu.Lock()
	if f.disposing {
		f.mu.Unlock()
		f.finishDispose()
		return false
	}
	f.setState(to)
	f.mu.Unlock()
	return true
}

// Dispose undoes everything the fiber registered, last first, and leaves
// it disposed. Disposing a disposed fiber does nothing. A fiber disposed
// while loading is disposed as soon as its apply returns, one disposed
// while unloading for a reload as soon as the unload ends. In every case
// the fiber's context ([Context.Done]) is cancelled at once and the fiber
// refuses new registrations from then on.
func (f *Fiber) Dispose() error {
	f.mu.Lock()
	switch {
	case f.state == StateDisposed || f.disposing:
		f.mu.Unlock()
		return nil
	case f.state == StateUnloading:
		f.disposing = true
		f.requestEnd()
		f.mu.Unlock()
		return nil
	case f.state == StateLoading:
		f.disposeRequested = true
		f.requestEnd()
		f.mu.Unlock()
		return nil
	}
	f.disposing = true
	f.setState(StateUnloading)
	f.requestEnd()
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
