package bus

import (
	"context"
	"errors"
	"reflect"
)

// ErrNoHandler is returned by a waterfall with no fallback when every
// listener called next.
var ErrNoHandler = errors.New("bus: no handler")

// Next continues a waterfall with the next listener, or the fallback.
type Next[P, R any] func(ctx context.Context, payload P) (R, error)

// Waterfall is a typed key for an onion-style event: each listener
// receives next and decides whether, when and with what to call it; the
// innermost handler is the fallback given to [Waterfall.Run].
type Waterfall[P, R any] struct {
	id   int
	name string
}

// NewWaterfall returns the key of the waterfall called name.
func NewWaterfall[P, R any](name string) Waterfall[P, R] {
	sig := reflect.TypeFor[func(context.Context, P, Next[P, R]) (R, error)]()
	return Waterfall[P, R]{id: register(name, sig), name: name}
}

// Name returns the waterfall name.
func (w Waterfall[P, R]) Name() string { return w.name }

// On registers fn, owned by c's fiber, and returns its disposer. A
// listener registered with [Prepend] is outermost.
func (w Waterfall[P, R]) On(c *Context, fn func(ctx context.Context, payload P, next Next[P, R]) (R, error), opts ...ListenOption) (dispose func()) {
	return addListener(c, w.id, w.name, fn, opts)
}

// Run runs the veto listeners, then the listeners from outermost to
// innermost, ending at fallback. Errors pass through unchanged; a panic in
// a listener becomes a [*PluginError] naming its plugin.
func (w Waterfall[P, R]) Run(ctx context.Context, c *Context, p P, fallback Next[P, R]) (R, error) {
	var zero R
	if err := (Event[P]{id: w.id, name: w.name}).Check(ctx, c, p); err != nil {
		return zero, err
	}
	var items []*listener
	if ll := c.root.listeners(w.id); ll != nil {
		items = ll.items
	}
	subject := subjectOf(p)
	var call func(i int, ctx context.Context, p P) (R, error)
	call = func(i int, ctx context.Context, p P) (result R, err error) {
		for ; i < len(items); i++ {
			l := items[i]
			if l.filter != nil && !l.receives(subject) {
				continue
			}
			if l.claim() {
				break
			}
		}
		if i >= len(items) {
			if fallback == nil {
				return zero, ErrNoHandler
			}
			return fallback(ctx, p)
		}
		l := items[i]
		panicked := true
		defer func() {
			if panicked {
				if v := recover(); v != nil {
					result, err = zero, &PluginError{Plugin: l.fiber.name, Op: w.name, Err: panicError(v)}
				}
			}
		}()
		next := func(ctx context.Context, p P) (R, error) {
			return call(i+1, ctx, p)
		}
		result, err = l.fn.(func(context.Context, P, Next[P, R]) (R, error))(ctx, p, next)
		panicked = false
		return result, err
	}
	return call(0, ctx, p)
}
