package bus

import (
	"context"
	"reflect"
)

// Hook is a typed key for an event whose listeners answer with an R: the
// first non-zero answer wins. Create keys with [NewHook].
type Hook[P any, R comparable] struct {
	id   int
	name string
}

// NewHook returns the key of the hook called name.
func NewHook[P any, R comparable](name string) Hook[P, R] {
	return Hook[P, R]{id: register(name, reflect.TypeFor[func(context.Context, P) (R, error)]()), name: name}
}

// Name returns the hook name.
func (h Hook[P, R]) Name() string { return h.name }

// On registers fn, owned by c's fiber, and returns its disposer.
func (h Hook[P, R]) On(c *Context, fn func(ctx context.Context, payload P) (R, error), opts ...ListenOption) (dispose func()) {
	return addListener(c, h.id, h.name, fn, opts)
}

// Serial runs the veto listeners, then the listeners in order until one
// returns a non-zero result or an error, which is returned. Between
// listeners it stops with ctx's error once ctx is done.
func (h Hook[P, R]) Serial(ctx context.Context, c *Context, p P) (R, error) {
	return h.run(ctx, c, p, true)
}

// Bail is Serial without consulting ctx between listeners: a synchronous
// query for the first answer.
func (h Hook[P, R]) Bail(ctx context.Context, c *Context, p P) (R, error) {
	return h.run(ctx, c, p, false)
}

func (h Hook[P, R]) run(ctx context.Context, c *Context, p P, checkCtx bool) (result R, err error) {
	var zero R
	if err := Event[P](h).Check(ctx, c, p); err != nil {
		return zero, err
	}
	ll := c.root.listeners(h.id)
	if ll == nil {
		return zero, nil
	}
	var (
		subject  any
		haveSubj bool
		cur      *listener
	)
	defer func() {
		if v := recover(); v != nil {
			result, err = zero, &PluginError{Plugin: cur.fiber.name, Op: h.name, Err: panicError(v)}
		}
	}()
	for _, l := range ll.items {
		if checkCtx {
			if err := ctx.Err(); err != nil {
				return zero, err
			}
		}
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
		cur = l
		r, err := l.fn.(func(context.Context, P) (R, error))(ctx, p)
		if err != nil {
			return zero, &PluginError{Plugin: l.fiber.name, Op: h.name, Err: err}
		}
		if r != zero {
			return r, nil
		}
	}
	return zero, nil
}
