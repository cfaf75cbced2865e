package live_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func closed(s *live.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// A session a turn was run on under its lease stays open, parked, and
// the next turn here gets the same copy.
func TestLeasedSessionIsParkedAndReused(t *testing.T) {
	h := newHarness(t)
	s, done, err := live.OpenLeased(h.ctx, h.m, "", false)
	require.NoError(t, err)
	h.appendAll(s, sessiontest.User("one"))
	require.NoError(t, done(h.ctx))
	require.False(t, closed(s), "parked, not closed")

	again, done, err := live.OpenLeased(h.ctx, h.m, s.ID(), false)
	require.NoError(t, err)
	require.Same(t, s, again)
	require.NoError(t, done(h.ctx))
}

// A parked copy another process appended behind is never served: it is
// closed and the log opened afresh, with the other's records. Both
// stores that lease (the file lock, the in-memory lease).
func TestParkedSessionBehindTheStoreIsReopened(t *testing.T) {
	stores := map[string]func(t *testing.T) session.Store{
		"memory": func(*testing.T) session.Store { return nil },
		"jsonl": func(t *testing.T) session.Store {
			st, err := jsonl.Open(t.TempDir())
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			other := h.manager()
			if st := mk(t); st != nil {
				h = newHarnessWith(t, st)
				// Another process: its own store over the same files.
				st2, err := jsonl.Open(filepath.Dir(st.(*jsonl.Store).Path("x")))
				require.NoError(t, err)
				t.Cleanup(func() { _ = st2.Close() })
				other = live.NewManager(h.root.Context(), st2, live.WithClock(h.tick.Now))
			}
			s, done, err := live.OpenLeased(h.ctx, h.m, "", false)
			require.NoError(t, err)
			h.appendAll(s, sessiontest.User("mine"))
			require.NoError(t, done(h.ctx))

			// The other worker takes the lease and appends.
			o, odone, err := live.OpenLeased(h.ctx, other, s.ID(), false)
			require.NoError(t, err)
			sessiontest.AppendAll(t, h.ctx, o, sessiontest.User("theirs"))
			require.NoError(t, odone(h.ctx))

			again, done, err := live.OpenLeased(h.ctx, h.m, s.ID(), false)
			require.NoError(t, err)
			require.NotSame(t, s, again, "the stale parked copy was served")
			require.True(t, closed(s))
			require.Equal(t, 2, again.Len())
			h.appendAll(again, sessiontest.User("mine again"))
			require.NoError(t, done(h.ctx))
		})
	}
}

// Parked sessions are bounded by count and by bytes: the least recently
// parked are closed, and a session larger than the byte bound is closed
// at once.
func TestParkedSessionsAreBounded(t *testing.T) {
	h := newHarness(t)
	h.m.SetHotLimits(live.HotLimits{Sessions: 2, Bytes: 4 << 10})
	turn := func(text string) *live.Session {
		s, done, err := live.OpenLeased(h.ctx, h.m, "", false)
		require.NoError(t, err)
		h.appendAll(s, sessiontest.User(text))
		require.NoError(t, done(h.ctx))
		return s
	}
	a, b, c := turn("a"), turn("b"), turn("c")
	require.True(t, closed(a), "the least recently parked is evicted past the count")
	require.False(t, closed(b))
	require.False(t, closed(c))

	big := turn(strings.Repeat("large prompt ", 1000))
	require.True(t, closed(big), "a session over the byte bound is not kept")
	require.False(t, closed(c))

	h.m.SetHotLimits(live.HotLimits{})
	require.True(t, closed(b))
	require.True(t, closed(c))
}

// A session closed while its turn runs refuses the turn's further
// appends; its done closes nothing more and parks nothing, and the next
// turn opens the log afresh.
func TestSessionClosedMidTurn(t *testing.T) {
	h := newHarness(t)
	s, done, err := live.OpenLeased(h.ctx, h.m, "", false)
	require.NoError(t, err)
	h.appendAll(s, sessiontest.User("before"))
	require.NoError(t, s.Close(h.ctx))
	_, err = s.Append(h.ctx, sessiontest.User("after"))
	require.ErrorIs(t, err, session.ErrClosed)
	require.NoError(t, done(h.ctx))

	again, done, err := live.OpenLeased(h.ctx, h.m, s.ID(), false)
	require.NoError(t, err)
	require.NotSame(t, s, again)
	require.Equal(t, 1, again.Len())
	require.NoError(t, done(h.ctx))
}
