package external

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// gate is the one veto listener of an entry whose plugin validates events,
// from the entry's first ready moment until the entry is disposed. While a
// process is ready it hands each event to it; while none is (the entry is
// being applied again, its process is stopping or starting, it crashed, a
// re-apply failed) it refuses the types the entry validated, or, with fail:
// open, lets them pass.
//
// It lives in a fiber of its own under the root, because reloading or
// failing the entry's fiber removes everything that fiber registered: a
// listener registered there, and swapped for a guard when the fiber goes,
// leaves a moment with neither (a dispatch that took its listener list
// before the guard came finds the validator already removed). The gate is
// never swapped: what it does is one atomic read of its state, made when
// it is called.
type gate struct {
	scope *bus.Context // the entry's context: its scope and its lifetime
	fiber *bus.Fiber   // the gate's own fiber
	state atomic.Pointer[gateState]
}

// gateState is what the gate does with an event.
type gateState struct {
	// ready validates the events of types; nil while no process is ready.
	ready *listeners
	// types are what the entry validates: the last ready process's.
	types typeSet
	// open: fail open (the last ready config's Fail).
	open bool
	// down says why no process is ready.
	down *UnavailableError
}

// newGate installs the gate of the entry whose context is c, down until
// [gate.up]; it goes with the entry.
func newGate(c *bus.Context, down *UnavailableError) (*gate, error) {
	g := &gate{scope: c}
	g.state.Store(&gateState{down: down})
	_, err := c.Root().Context().Plugin(bus.PluginFunc(Name, func(gc *bus.Context, _ struct{}) error {
		g.fiber = gc.Fiber()
		bus.Veto.On(gc, g.veto)
		return nil
	}), nil)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(c.Context(), g.remove)
	return g, nil
}

// remove disposes the gate: the entry is gone, and its policy with it.
func (g *gate) remove() { _ = g.fiber.Dispose() }

// up makes l the validator in force.
func (g *gate) up(l *listeners, types typeSet) {
	g.state.Store(&gateState{ready: l, types: types, open: l.open})
}

// down takes l out of force, if it is the validator in force, for why: from
// now on the gate refuses what l validated. The first reason stays: a
// crash is not restated as the stop that follows it.
func (g *gate) down(l *listeners, why *UnavailableError) {
	for {
		cur := g.state.Load()
		if cur.ready != l {
			return
		}
		next := &gateState{types: cur.types, open: cur.open, down: why}
		if g.state.CompareAndSwap(cur, next) {
			l.cn.log.Warn("refusing the events the plugin validates until it is ready again", "entry", why.Entry, "why", why.why())
			return
		}
	}
}

// failed records that applying the entry again failed with err, while no
// process is ready.
func (g *gate) failed(err error) {
	for {
		cur := g.state.Load()
		if cur.ready != nil {
			return
		}
		down := *cur.down
		down.Start = err
		next := *cur
		next.down = &down
		if g.state.CompareAndSwap(cur, &next) {
			return
		}
	}
}

// veto is the gate's listener of the veto phase.
func (g *gate) veto(ctx context.Context, d bus.Dispatch) error {
	if g.scope.Context().Err() != nil {
		// The entry's removal was requested: its policy goes with it. (A
		// failed fiber runs no disposer; the first event removes the gate.)
		g.remove()
		return nil
	}
	if !g.scope.Receives(d.Subject()) {
		return nil
	}
	st := g.state.Load()
	switch d.Name {
	case live.Committed.Name():
		cm, ok := d.Payload.(live.Commit)
		if !ok || cm.IsZero() || !st.types.has(cm.Record().Type()) {
			return nil
		}
		if st.ready != nil {
			return st.ready.validate(ctx, cm)
		}
		return st.refuse(cm.Record())
	case agentloop.ToolApprove.Name():
		q, ok := d.Payload.(*agentloop.ApprovalQuery)
		if st.ready == nil || !st.types.has(session.TypeToolCall) || !ok || q == nil || q.Session == nil {
			// Without a process the call's commit is refused (or passes).
			return nil
		}
		return st.ready.propose(ctx, q)
	}
	return nil
}

// refuse is the answer for rec while no process is ready: an
// [*UnavailableError], but for what only closes a turn, or when the entry
// fails open.
func (st *gateState) refuse(rec session.Record) error {
	if st.open || isCloser(rec) {
		return nil
	}
	e := *st.down
	e.Type = rec.Type()
	return &e
}

// closerCodes are the error codes of the synthetic tool results that end
// a turn cleanly: the loop's and crash repair's (session.Closers) and a
// cancelled turn's abandoned tools (agentloop.CodeToolAbandoned).
var closerCodes = []string{session.CodeToolNotStarted, session.CodeToolOutcomeUnknown, agentloop.CodeToolAbandoned}

// isCloser reports whether rec only closes what is open (a synthetic tool
// result, a step or turn end): the gate lets it through so that a session
// is never left with a turn it cannot end.
func isCloser(rec session.Record) bool {
	switch rec.Type() {
	case session.TypeStepEnd, session.TypeTurnEnd:
		return true
	case session.TypeToolResult:
		r, err := session.DecodeData[session.ToolResult](rec)
		return err == nil && r.Content == "" && r.Error != nil && slices.Contains(closerCodes, r.Error.Code)
	}
	return false
}

// gates holds the gate of each entry fiber that has one.
type gates struct {
	mu sync.Mutex
	m  map[*bus.Fiber]*gate
}

// of returns the gate of the entry whose context is c, installing it (down
// for down) the first time.
func (gs *gates) of(c *bus.Context, down *UnavailableError) (*gate, error) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	f := c.Fiber()
	if g := gs.m[f]; g != nil {
		return g, nil
	}
	g, err := newGate(c, down)
	if err != nil {
		return nil, err
	}
	if gs.m == nil {
		gs.m = map[*bus.Fiber]*gate{}
	}
	gs.m[f] = g
	context.AfterFunc(c.Context(), func() {
		gs.mu.Lock()
		delete(gs.m, f)
		gs.mu.Unlock()
	})
	return g, nil
}

// lookup returns the gate of f, if it has one.
func (gs *gates) lookup(f *bus.Fiber) *gate {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return gs.m[f]
}
