package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

var epoch = time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)

var (
	user       = sessiontest.User
	assistant  = sessiontest.Assistant
	result     = sessiontest.Result
	replace    = sessiontest.Replace
	turnEvents = sessiontest.TurnEvents
)

// harness makes logs in memory, without a bus or a store, with a clock
// that advances a millisecond per reading and ids s1, s2, …. (The live
// sessions' harness is in session/live.)
type harness struct {
	t    *testing.T
	ctx  context.Context
	tick *sessiontest.Ticker
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, ctx: context.Background(), tick: &sessiontest.Ticker{Epoch: epoch}}
}

// testLog is a log with its header, appended to as a live session is.
type testLog struct {
	*session.LogState
	h    *harness
	info session.Info
}

func (l *testLog) Info() session.Info { return l.info }

func (l *testLog) Append(_ context.Context, ev session.Event) (session.Record, error) {
	staged, err := l.Stage(session.LogTime(l.h.tick.Now()), &ev)
	if err != nil {
		return session.Record{}, err
	}
	return staged.Record(), l.Commit(staged)
}

func (h *harness) create() *testLog {
	id := h.tick.ID()
	st, err := session.NewLogState(nil)
	require.NoError(h.t, err)
	return &testLog{LogState: st, h: h, info: session.Info{ID: id, Version: session.Version, Created: session.LogTime(h.tick.Now())}}
}

func (h *harness) appendAll(s *testLog, evs ...session.Event) []session.Record {
	h.t.Helper()
	return sessiontest.AppendAll(h.t, h.ctx, s, evs...)
}
