package bus

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
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
	id    int
	name  string
	spare *atomic.Pointer[chain[P, R]] // a chain to reuse, or nil
}

// NewWaterfall returns the key of the waterfall called name.
func NewWaterfall[P, R any](name string) Waterfall[P, R] {
	sig := reflect.TypeFor[func(context.Context, P, Next[P, R]) (R, error)]()
	return Waterfall[P, R]{id: register(name, sig), name: name, spare: new(atomic.Pointer[chain[P, R]])}
}

// ErrNextAfterReturn is returned by a waterfall's next called after the
// dispatch it belongs to has returned.
var ErrNextAfterReturn = errors.New("bus: waterfall next called after its dispatch returned")

// Name returns the waterfall name.
func (w Waterfall[P, R]) Name() string { return w.name }

// On registers fn, owned by c's fiber, and returns its disposer. A
// listener registered with [Prepend] is outermost.
func (w Waterfall[P, R]) On(c *Context, fn func(ctx context.Context, payload P, next Next[P, R]) (R, error), opts ...ListenOption) (dispose func()) {
	return addListener(c, w.id, w.name, fn, opts)
}

// Run runs the veto listeners, then the listeners from outermost to
// innermost, ending at fallback. Errors pass through unchanged; a panic in
// a listener unwinds the onion and becomes the [*PluginError] Run returns,
// naming the listener's plugin (a panic in fallback names "fallback",
// seen by the listeners as next's error). A listener may
// call next more than once, but not from several goroutines at once, and
// only until Run returns: a later call gets [ErrNextAfterReturn]. (A value
// that must go on lazily, like a stream, should call next before it is
// returned and wrap what next gave.)
func (w Waterfall[P, R]) Run(ctx context.Context, c *Context, p P, fallback Next[P, R]) (R, error) {
	var zero R
	if err := (Event[P]{id: w.id, name: w.name}).Check(ctx, c, p); err != nil {
		return zero, err
	}
	ll := c.root.listeners(w.id)
	if ll == nil || len(ll.items) == 0 {
		if fallback == nil {
			return zero, ErrNoHandler
		}
		return fallback(ctx, p)
	}
	// Chains are reused: the onion costs one small allocation (next,
	// which knows its dispatch's generation) whatever its depth.
	// One spare chain per waterfall serves the common, sequential case;
	// concurrent dispatches allocate their own.
	var ch *chain[P, R]
	if w.spare != nil {
		ch = w.spare.Swap(nil)
	}
	if ch == nil {
		ch = new(chain[P, R])
	}
	ch.ll, ch.fns, ch.name, ch.fallback, ch.cur, ch.pos = ll, ll.fns.([]func(context.Context, P, Next[P, R]) (R, error)), w.name, fallback, -1, 0
	if !ll.plain {
		// Only filtered listeners need the subject: finding it costs a type
		// assertion to an interface.
		ch.subject = subjectOf(p)
	}
	gen := ch.gen.Load()
	ch.next = func(ctx context.Context, p P) (R, error) {
		if ch.gen.Load() != gen {
			var zero R
			return zero, ErrNextAfterReturn
		}
		return ch.call(ctx, p)
	}
	result, err := ch.run(ctx, p)
	ch.gen.Add(1)
	ch.ll, ch.fns, ch.fallback, ch.subject, ch.next = nil, nil, nil, nil, nil
	if w.spare != nil {
		w.spare.Store(ch)
	}
	return result, err
}

// chain is one waterfall dispatch: pos is the index of the next listener
// to consider and cur the listener running, both restored when a call
// returns, so next can be called again.
type chain[P, R any] struct {
	ll       *listenerList
	fns      []func(context.Context, P, Next[P, R]) (R, error)
	name     string
	fallback Next[P, R]
	subject  any
	next     Next[P, R]
	pos      int
	cur      int
	gen      atomic.Uint64 // counts the dispatches the chain served
}

func (ch *chain[P, R]) call(ctx context.Context, p P) (result R, err error) {
	start, prev := ch.pos, ch.cur
	i := start
	for ; i < len(ch.fns); i++ {
		l := ch.ll.items[i]
		if l.filter != nil && !l.receives(ch.subject) {
			continue
		}
		if l.claim() {
			break
		}
	}
	if i >= len(ch.fns) {
		return ch.callFallback(ctx, p)
	}
	ch.pos, ch.cur = i+1, i
	result, err = ch.fns[i](ctx, p, ch.next)
	ch.pos, ch.cur = start, prev
	return result, err
}

// run calls the outermost listener. A panic anywhere in the onion unwinds
// it to here (the listeners' own defers run on the way) and becomes the
// dispatch's error, naming the plugin of the listener that panicked: the
// one running, since each level restores cur only when it returns. One
// recover for the whole onion, not one per level, keeps a deep waterfall
// cheap.
func (ch *chain[P, R]) run(ctx context.Context, p P) (result R, err error) {
	defer func() {
		if v := recover(); v != nil {
			var zero R
			result, err = zero, &PluginError{Plugin: ch.ll.items[ch.cur].fiber.name, Op: ch.name, Err: panicError(v)}
		}
	}()
	return ch.call(ctx, p)
}

// callFallback calls the innermost handler, turning its panic into an
// error like a listener's.
func (ch *chain[P, R]) callFallback(ctx context.Context, p P) (result R, err error) {
	if ch.fallback == nil {
		return result, ErrNoHandler
	}
	returned := false
	defer func() {
		if !returned {
			if v := recover(); v != nil {
				var zero R
				result, err = zero, &PluginError{Plugin: "fallback", Op: ch.name, Err: panicError(v)}
			}
		}
	}()
	result, err = ch.fallback(ctx, p)
	returned = true
	return result, err
}
