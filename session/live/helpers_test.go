package live_test

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
	"github.com/vigil-run/vigil/session/sessiontest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var epoch = time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)

// harness is a bus, a store and a manager with a clock that advances a
// millisecond per reading and ids s1, s2, ….
type harness struct {
	t     *testing.T
	ctx   context.Context
	root  *bus.Root
	store session.Store
	m     *live.Manager
	tick  *sessiontest.Ticker
}

func newHarness(t *testing.T) *harness {
	return newHarnessWith(t, memory.New())
}

func newHarnessWith(t *testing.T, store session.Store) *harness {
	h := &harness{t: t, ctx: context.Background(), root: bus.New(), store: store, tick: &sessiontest.Ticker{Epoch: epoch}}
	t.Cleanup(func() { _ = h.root.Dispose() })
	h.m = h.manager()
	return h
}

// manager returns another manager over the same bus and store.
func (h *harness) manager() *live.Manager {
	return live.NewManager(h.root.Context(), h.store, live.WithClock(h.tick.Now), live.WithIDs(h.tick.ID))
}

func (h *harness) create() *live.Session {
	s, err := h.m.Create(h.ctx)
	require.NoError(h.t, err)
	return s
}

func (h *harness) appendAll(s *live.Session, evs ...session.Event) []session.Record {
	h.t.Helper()
	return sessiontest.AppendAll(h.t, h.ctx, s, evs...)
}

// userLine is the line of a user/message record at seq, stamped epoch
// plus seq milliseconds.
func userLine(t *testing.T, seq int64, text string) string {
	r, err := session.NewRecord(seq, epoch.Add(time.Duration(seq)*time.Millisecond), sessiontest.User(text))
	require.NoError(t, err)
	return string(r.AppendLine(nil))
}
