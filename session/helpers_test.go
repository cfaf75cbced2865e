package session_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

var epoch = time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)

// harness makes logs in memory, without a bus or a store, with a clock
// that advances a millisecond per reading and ids s1, s2, …. (The live
// sessions' harness is in session/live.)
type harness struct {
	t   *testing.T
	ctx context.Context

	mu    sync.Mutex
	ticks int
	ids   int
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, ctx: context.Background()}
}

func (h *harness) now() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ticks++
	return epoch.Add(time.Duration(h.ticks) * time.Millisecond)
}

// testLog is a log with its header, appended to as a live session is.
type testLog struct {
	*session.LogState
	h    *harness
	info session.Info
}

func (l *testLog) Info() session.Info { return l.info }

func (l *testLog) Append(_ context.Context, ev session.Event) (*session.Record, error) {
	rec := new(session.Record)
	staged, err := l.Stage(rec, session.LogTime(l.h.now()), &ev)
	if err != nil {
		return nil, err
	}
	return rec, l.Commit(staged)
}

func (h *harness) create() *testLog {
	h.mu.Lock()
	h.ids++
	id := fmt.Sprintf("s%d", h.ids)
	h.mu.Unlock()
	st, err := session.NewLogState(nil)
	require.NoError(h.t, err)
	return &testLog{LogState: st, h: h, info: session.Info{ID: id, Version: session.Version, Created: session.LogTime(h.now())}}
}

func (h *harness) appendAll(s *testLog, evs ...session.Event) []*session.Record {
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
