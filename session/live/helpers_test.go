package live_test

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
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
	m     *live.Manager

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
func (h *harness) manager() *live.Manager {
	return live.NewManager(h.root.Context(), h.store, live.WithClock(h.now), live.WithIDs(h.newID))
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

func (h *harness) create() *live.Session {
	s, err := h.m.Create(h.ctx)
	require.NoError(h.t, err)
	return s
}

func (h *harness) appendAll(s *live.Session, evs ...session.Event) []*session.Record {
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

func user(s string) session.Event {
	return session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: s}}
}

func replace(start, end int64, content string, sources ...int64) session.Event {
	return session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: start, End: end}, Sources: sources, Data: session.UserMessage{Content: content}}
}

var update = flag.Bool("update", false, "rewrite golden files")

const header = `{"type":"session","version":1,"id":"s1","created":"2026-11-29T20:21:24.000Z"}`

func line(s string) string { return s + "\n" }

var (
	l0 = `{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{"content":"a"}}`
	l2 = `{"seq":2,"type":"user/message","time":"2026-11-29T20:21:24.002Z","data":{"content":"c"}}`
)
