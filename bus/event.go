package bus

import (
	"context"
	"errors"
	"reflect"
	"sync"
)

// Event is a typed event key: listeners receive a P. Create keys once, at
// package level, with [NewEvent].
type Event[P any] struct {
	id   int
	name string
}

// NewEvent returns the key of the event called name. Every key of one name
// must have the same payload type; a mismatch panics at init time.
func NewEvent[P any](name string) Event[P] {
	return Event[P]{id: register(name, reflect.TypeFor[func(context.Context, P) error]()), name: name}
}

// Name returns the event name.
func (e Event[P]) Name() string { return e.name }

// On registers fn, owned by c's fiber, and returns a function that removes
// it. See [Prepend], [Once] and [Global].
func (e Event[P]) On(c *Context, fn func(ctx context.Context, payload P) error, opts ...ListenOption) (dispose func()) {
	return addListener(c, e.id, e.name, fn, opts)
}

// Emit runs the veto listeners, then every listener in order; the first
// error stops the dispatch and is returned wrapped in a [*PluginError]
// naming the listener's plugin. A panic becomes such an error too.
func (e Event[P]) Emit(ctx context.Context, c *Context, p P) error {
	if err := e.Check(ctx, c, p); err != nil {
		return err
	}
	ll := c.root.listeners(e.id)
	if ll == nil {
		return nil
	}
	return emitList(ctx, ll, e.name, p, false)
}

// Check runs only the veto phase ([Veto] listeners) of a dispatch of p.
// Together with [Event.Observe] it splits a dispatch around a commit.
func (e Event[P]) Check(ctx context.Context, c *Context, p P) error {
	r := c.root
	if r.disposed.Load() {
		return ErrDisposed
	}
	if vl := r.listeners(vetoID); vl != nil && len(vl.items) > 0 {
		return emitList(ctx, vl, Veto.name, Dispatch{Name: e.name, Payload: p}, false)
	}
	return nil
}

// Observe runs every listener in order without the veto phase, as
// observers of something already done: a failing or panicking listener is
// logged through its plugin's logger and does not stop the others. The
// failures are returned joined.
func (e Event[P]) Observe(ctx context.Context, c *Context, p P) error {
	if c.root.disposed.Load() {
		return ErrDisposed
	}
	ll := c.root.listeners(e.id)
	if ll == nil {
		return nil
	}
	return emitList(ctx, ll, e.name, p, true)
}

// emitList calls the listeners of ll in order. With all set it calls every
// listener and joins the failures; otherwise the first failure stops it.
func emitList[P any](ctx context.Context, ll *listenerList, name string, p P, all bool) error {
	if !all {
		return emitFirst(ctx, ll, name, p)
	}
	var collected []error
	for i := 0; i < len(ll.items); {
		n, err := emitFrom(ctx, ll, name, p, i)
		if err == nil {
			break
		}
		ll.items[n].fiber.logger.Error("observer failed", "event", name, "error", err)
		collected = append(collected, err)
		i = n + 1
	}
	return errors.Join(collected...)
}

// emitFirst is the hot path of Emit: it stops at the first failure.
func emitFirst[P any](ctx context.Context, ll *listenerList, name string, p P) (err error) {
	if !ll.plain {
		_, err = emitFrom(ctx, ll, name, p, 0)
		return err
	}
	fns := ll.fns.([]func(context.Context, P) error)
	items := ll.items
	i := 0
	defer func() {
		if v := recover(); v != nil {
			err = &PluginError{Plugin: items[i].fiber.name, Op: name, Err: panicError(v)}
		}
	}()
	for ; i < len(fns); i++ {
		if items[i].removed.Load() {
			continue
		}
		if e := fns[i](ctx, p); e != nil {
			return &PluginError{Plugin: items[i].fiber.name, Op: name, Err: e}
		}
	}
	return nil
}

// emitFrom calls listeners from index start on, honouring filters and Once,
// and returns the index of the listener that failed with its error.
func emitFrom[P any](ctx context.Context, ll *listenerList, name string, p P, start int) (i int, err error) {
	fns := ll.fns.([]func(context.Context, P) error)
	var (
		subject  any
		haveSubj bool
	)
	i = start
	defer func() {
		if v := recover(); v != nil {
			err = &PluginError{Plugin: ll.items[i].fiber.name, Op: name, Err: panicError(v)}
		}
	}()
	for ; i < len(fns); i++ {
		l := ll.items[i]
		if l.filter != nil {
			if !haveSubj {
				subject, haveSubj = subjectOf(p), true
			}
			if !l.receives(subject) {
				continue
			}
		}
		if !l.claim() {
			continue
		}
		if e := fns[i](ctx, p); e != nil {
			return i, &PluginError{Plugin: l.fiber.name, Op: name, Err: e}
		}
	}
	return i, nil
}

// Parallel runs the veto listeners, then every listener concurrently, and
// returns their errors joined. It returns once all listeners returned.
func (e Event[P]) Parallel(ctx context.Context, c *Context, p P) error {
	if err := e.Check(ctx, c, p); err != nil {
		return err
	}
	ll := c.root.listeners(e.id)
	if ll == nil {
		return nil
	}
	subject := subjectOf(p)
	errs := make([]error, len(ll.items))
	var wg sync.WaitGroup
	fns := ll.fns.([]func(context.Context, P) error)
	for i, l := range ll.items {
		if l.filter != nil && !l.receives(subject) {
			continue
		}
		if !l.claim() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if v := recover(); v != nil {
					errs[i] = &PluginError{Plugin: l.fiber.name, Op: e.name, Err: panicError(v)}
				}
			}()
			if err := fns[i](ctx, p); err != nil {
				errs[i] = &PluginError{Plugin: l.fiber.name, Op: e.name, Err: err}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Dispatch is the payload of the internal/dispatch event: the name and
// payload of a dispatch about to run.
type Dispatch struct {
	Name    string
	Payload any
}

// Subject implements [Subjecter] with the subject of the payload, so a veto
// listener registered through a scoped context vetoes only dispatches
// about its subject.
func (d Dispatch) Subject() any { return subjectOf(d.Payload) }

// Veto is the internal/dispatch event. Its listeners run before the
// listeners of every other event (and before the commit of a session
// event); an error vetoes the dispatch and is returned to the emitter.
// It is for plugins that check what others do before anything acts on it
// (invariants, an external plugin that validates).
var Veto = NewEvent[Dispatch]("internal/dispatch")

var vetoID = Veto.id
