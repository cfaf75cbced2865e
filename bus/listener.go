package bus

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
)

// ListenOption changes how a listener is registered.
type ListenOption uint8

const (
	// Prepend puts the listener before every listener registered so far
	// (the latest prepend runs first). Without it listeners are appended.
	Prepend ListenOption = 1 << iota
	// Once removes the listener after its first call.
	Once
	// Global lets the listener receive every dispatch, whatever the filter
	// of the context it was registered through.
	Global
)

type listener struct {
	fn      any // the typed listener function
	fiber   *Fiber
	filter  func(any) bool // nil: receives every dispatch
	once    bool
	removed atomic.Bool
	dispose func()
}

// listenerList is an immutable snapshot of an event's listeners. fns holds
// the same listeners' functions as a typed slice ([]F), so dispatch makes
// one type assertion per dispatch rather than one per listener.
type listenerList struct {
	items []*listener
	fns   any
	plain bool // no listener has a filter or Once: the fast path applies
}

func newListenerList[F any](items []*listener) *listenerList {
	fns := make([]F, len(items))
	plain := true
	for i, l := range items {
		fns[i] = l.fn.(F)
		if l.filter != nil || l.once {
			plain = false
		}
	}
	return &listenerList{items: items, fns: fns, plain: plain}
}

type eventSlot struct {
	list atomic.Pointer[listenerList]
}

// registry gives every event name one id and one listener signature for
// the whole process, so dispatch finds its listeners by index.
var registry = struct {
	sync.Mutex
	byName map[string]eventKind
}{byName: map[string]eventKind{}}

type eventKind struct {
	id  int
	sig reflect.Type
}

// register returns the id of name, checking that every key of that name
// agrees on the listener signature. A disagreement is a programming error
// in the event taxonomy, found at init time, so it panics.
func register(name string, sig reflect.Type) int {
	registry.Lock()
	defer registry.Unlock()
	if k, ok := registry.byName[name]; ok {
		if k.sig != sig {
			panic(fmt.Sprintf("bus: event %q registered with listener type %v and %v", name, k.sig, sig))
		}
		return k.id
	}
	k := eventKind{id: len(registry.byName), sig: sig}
	registry.byName[name] = k
	return k.id
}

// listeners returns the current listener list of an event, or nil.
func (r *Root) listeners(id int) *listenerList {
	s := *r.slots.Load()
	if id >= len(s) || s[id] == nil {
		return nil
	}
	return s[id].list.Load()
}

// ListenerCount reports how many listeners the event called name has.
func (r *Root) ListenerCount(name string) int {
	registry.Lock()
	k, ok := registry.byName[name]
	registry.Unlock()
	if !ok {
		return 0
	}
	l := r.listeners(k.id)
	if l == nil {
		return 0
	}
	n := 0
	for _, li := range l.items {
		if !li.removed.Load() {
			n++
		}
	}
	return n
}

func (r *Root) slotFor(id int) *eventSlot {
	// Called with r.mu held.
	s := *r.slots.Load()
	if id < len(s) && s[id] != nil {
		return s[id]
	}
	grown := make([]*eventSlot, max(len(s), id+1))
	copy(grown, s)
	grown[id] = &eventSlot{}
	r.slots.Store(&grown)
	return grown[id]
}

// addListener registers fn for event id through c and returns its disposer.
// A context whose fiber no longer accepts registrations gets a no-op
// disposer and nothing is registered.
func addListener[F any](c *Context, id int, name string, fn F, opts []ListenOption) func() {
	var o ListenOption
	for _, x := range opts {
		o |= x
	}
	l := &listener{fn: fn, fiber: c.fiber, once: o&Once != 0}
	if o&Global == 0 {
		l.filter = c.filter
	}
	r := c.root
	r.mu.Lock()
	slot := r.slotFor(id)
	r.mu.Unlock()

	remove := func() {
		l.removed.Store(true)
		r.mu.Lock()
		cur := slot.list.Load()
		if cur != nil {
			if i := slices.Index(cur.items, l); i >= 0 {
				next := slices.Delete(slices.Clone(cur.items), i, i+1)
				slot.list.Store(newListenerList[F](next))
			}
		}
		r.mu.Unlock()
	}
	// The disposer is registered before the listener becomes visible, so a
	// dispatch never sees a listener without its dispose (a Once listener
	// calls it) and a fiber that no longer accepts registrations never has
	// its listener called.
	var handle *disposer
	if err := c.fiber.addDisposer(remove, &handle); err != nil {
		c.fiber.logger.Warn("listener not registered: fiber is not active", "event", name)
		return func() {}
	}
	l.dispose = func() {
		handle.run()
		c.fiber.removeDisposer(handle)
	}

	r.mu.Lock()
	// remove marks l before taking r.mu: if the fiber was disposed in the
	// meantime, l must not be inserted after its removal already ran.
	if !l.removed.Load() {
		old := slot.list.Load()
		var items []*listener
		if old != nil {
			items = old.items
		}
		next := make([]*listener, 0, len(items)+1)
		if o&Prepend != 0 {
			next = append(append(next, l), items...)
		} else {
			next = append(append(next, items...), l)
		}
		slot.list.Store(newListenerList[F](next))
	}
	r.mu.Unlock()
	return l.dispose
}

// subjectOf returns the dispatch subject named by a payload, or nil.
func subjectOf[P any](p P) any {
	if s, ok := any(p).(Subjecter); ok {
		return s.Subject()
	}
	return nil
}

// claim reports whether l is still registered and, for a Once listener,
// takes its single call and removes it.
func (l *listener) claim() bool {
	if !l.once {
		return !l.removed.Load()
	}
	if !l.removed.CompareAndSwap(false, true) {
		return false
	}
	l.dispose()
	return true
}

// receives reports whether a listener with a filter receives a dispatch
// about subject; dispatches without a subject reach only unfiltered ones.
func (l *listener) receives(subject any) bool { return receives(l.filter, subject) }

// receives reports whether filter lets a dispatch about subject through.
func receives(filter func(any) bool, subject any) bool {
	return subject != nil && filter(subject)
}
