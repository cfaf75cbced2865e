package session_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/memory"
	"github.com/vigil-run/vigil/session/sessiontest"
)

var epoch = time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)

// harness is a bus, a store and a manager with a clock that advances a
// millisecond per reading and ids s1, s2, ….
type harness struct {
	t     *testing.T
	ctx   context.Context
	root  *bus.Root
	store session.Store
	m     *session.Manager

	mu    sync.Mutex
	ticks int
	ids   int
}

func newHarness(t *testing.T) *harness {
	return newHarnessWith(t, memory.New())
}

func newHarnessWith(t *testing.T, store session.Store) *harness {
	h := &harness{t: t, ctx: context.Background(), root: bus.New(), store: store}
	t.Cleanup(func() { _ = h.root.Dispose() })
	h.m = h.manager()
	return h
}

// manager returns another manager over the same bus and store.
func (h *harness) manager() *session.Manager {
	return session.NewManager(h.root.Context(), h.store, session.WithClock(h.now), session.WithIDs(h.newID))
}

func (h *harness) now() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ticks++
	return epoch.Add(time.Duration(h.ticks) * time.Millisecond)
}

func (h *harness) newID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids++
	return fmt.Sprintf("s%d", h.ids)
}

func (h *harness) create() *session.Session {
	s, err := h.m.Create(h.ctx)
	require.NoError(h.t, err)
	return s
}

func (h *harness) appendAll(s *session.Session, evs ...session.Event) []*session.Record {
	h.t.Helper()
	out := make([]*session.Record, 0, len(evs))
	for _, ev := range evs {
		r, err := s.Append(h.ctx, ev)
		require.NoError(h.t, err)
		out = append(out, r)
	}
	return out
}

// turnEvents is one complete turn (see sessiontest.Turn) as events for a
// log continuing at next.
func turnEvents(t testing.TB, next int64, turn int) []session.Event {
	recs := sessiontest.Turn(t, next, turn)
	evs := make([]session.Event, len(recs))
	for i, r := range recs {
		evs[i] = session.Event{Type: r.Type(), Turn: r.Turn(), Step: r.Step(), Sources: r.Sources(), Data: r.Data()}
	}
	return evs
}
