package live_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// A listener registered on a session's context belongs to the session's
// lifetime: once the session is closed it never fires again, not even
// for a later session opened under the same id.
func TestClosedSessionListenerNeverFiresAgain(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	var heard atomic.Int32
	live.Committed.On(s.Context(), func(context.Context, live.Commit) error {
		heard.Add(1)
		return nil
	})
	closed := false
	require.True(t, s.OnClose(func() { closed = true }))
	h.appendAll(s, sessiontest.User("before"))
	require.EqualValues(t, 1, heard.Load())

	require.NoError(t, s.Close(h.ctx))
	require.True(t, closed, "OnClose ran at Close")
	select {
	case <-s.Done():
	default:
		t.Fatal("Done is not closed after Close")
	}

	again, err := h.m.Open(h.ctx, s.ID())
	require.NoError(t, err)
	require.NotSame(t, s, again)
	h.appendAll(again, sessiontest.User("after"))
	require.EqualValues(t, 1, heard.Load(), "the closed session's listener fired for the session opened again")

	require.False(t, s.OnClose(func() { t.Fatal("ran") }), "OnClose on a closed session registers nothing")
}

// Disposing the manager's fiber (its store plugin unloaded) ends its
// sessions' lifetimes: they are closed.
func TestManagerDisposalClosesSessions(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	require.NoError(t, h.root.Dispose())
	select {
	case <-s.Done():
	default:
		t.Fatal("the session outlived its manager's fiber")
	}
	_, err := s.Append(h.ctx, sessiontest.User("late"))
	require.Error(t, err)
	_, ok := h.m.Get(s.ID())
	require.False(t, ok)
}
