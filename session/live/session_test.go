package live_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestAppendAssignsSeqAndTimeFromClock(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	recs := h.appendAll(s, sessiontest.User("a"), sessiontest.User("b"))
	assert.Equal(t, int64(0), recs[0].Seq())
	assert.Equal(t, int64(1), recs[1].Seq())
	assert.True(t, recs[0].Time().Before(recs[1].Time()))
	assert.Equal(t, "2026-11-29T20:21:24.002Z", recs[0].Time().Format("2006-01-02T15:04:05.000Z07:00"))
	assert.Equal(t, 2, s.Len())
	assert.Equal(t, recs, s.Records())
}

func TestAppendRefusesInvalidEventsAndCommitsNothing(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	h.appendAll(s, sessiontest.User("a"))
	tests := []struct {
		name string
		ev   session.Event
		err  error
	}{
		{"unknown type", session.Event{Type: "memo/x"}, session.ErrUnknownType},
		{"missing step", session.Event{Type: session.TypeAssistantChunk, Turn: 1}, session.ErrInvalidEvent},
		{"replace off the surface", sessiontest.Replace(0, 0, "x"), session.ErrInvalidReplace},
		{"replace with uncited shadowed event", session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace}, Data: session.UserMessage{}}, session.ErrInvalidReplace},
		{"non-JSON payload", session.Event{Type: session.TypeUserMessage, Data: []byte("{")}, session.ErrInvalidPayload},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Append(h.ctx, tt.ev)
			require.ErrorIs(t, err, tt.err)
			assert.Equal(t, 1, s.Len())
		})
	}
	r, err := s.Append(h.ctx, sessiontest.User("b"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Seq(), "no seq was used up")
}

func TestAppendVetoCommitsNothing(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	veto := errors.New("no")
	var observed int
	live.Committed.On(h.root.Context(), func(ctx context.Context, c live.Commit) error { observed++; return nil })
	dispose := bus.Veto.On(h.root.Context(), func(ctx context.Context, d bus.Dispatch) error {
		if d.Name == live.Committed.Name() {
			return veto
		}
		return nil
	})
	_, err := s.Append(h.ctx, sessiontest.User("a"))
	require.ErrorIs(t, err, veto)
	assert.Zero(t, s.Len())
	assert.Empty(t, s.Messages())
	assert.Zero(t, observed)
	log, err := h.store.Load(h.ctx, s.ID())
	require.NoError(t, err)
	assert.Empty(t, log.Records, "the store has nothing either")

	dispose()
	r, err := s.Append(h.ctx, sessiontest.User("a"))
	require.NoError(t, err)
	assert.Equal(t, int64(0), r.Seq())
	assert.Equal(t, 1, observed)
}

func TestAppendPassesSameCommitToCheckAndObserve(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	var checked, observed []live.Commit
	bus.Veto.On(h.root.Context(), func(ctx context.Context, d bus.Dispatch) error {
		if c, ok := d.Payload.(live.Commit); ok {
			// Before the commit: the record is not in the session yet.
			assert.Equal(t, int(c.Record().Seq()), c.Session().Len())
			checked = append(checked, c)
		}
		return nil
	})
	live.Committed.On(h.root.Context(), func(ctx context.Context, c live.Commit) error {
		assert.Equal(t, int(c.Record().Seq())+1, c.Session().Len(), "observers run after the commit")
		assert.True(t, c.Record() == c.Session().Records()[c.Record().Seq()], "the very record")
		observed = append(observed, c)
		return nil
	})
	recs := h.appendAll(s, sessiontest.User("a"), sessiontest.User("b"))
	require.Len(t, checked, 2)
	require.Len(t, observed, 2)
	for i := range recs {
		assert.True(t, checked[i] == observed[i], "the same commit")
		assert.True(t, recs[i] == observed[i].Record(), "the same record")
		assert.Same(t, s, observed[i].Session())
		assert.Equal(t, s.ID(), observed[i].Subject())
	}
}

func TestObserverFailureDoesNotUndoCommit(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	live.Committed.On(h.root.Context(), func(ctx context.Context, c live.Commit) error { return errors.New("observer broke") })
	live.Committed.On(h.root.Context(), func(ctx context.Context, c live.Commit) error { panic("observer panicked") })
	var later int
	live.Committed.On(h.root.Context(), func(ctx context.Context, c live.Commit) error { later++; return nil })
	r, err := s.Append(h.ctx, sessiontest.User("a"))
	require.NoError(t, err)
	assert.Equal(t, int64(0), r.Seq())
	assert.Equal(t, 1, s.Len())
	assert.Equal(t, 1, later, "the other observers still ran")
}

func TestAppendFromOwnListenerIsReentrant(t *testing.T) {
	for _, phase := range []string{"veto", "observe"} {
		t.Run(phase, func(t *testing.T) {
			h := newHarness(t)
			s := h.create()
			other := h.create()
			var inner, otherErr, closeErr error
			once := sync.Once{}
			fn := func(ctx context.Context, c live.Commit) error {
				if c.Session() != s {
					return nil
				}
				once.Do(func() {
					_, inner = s.Append(ctx, sessiontest.User("inner"))
					_, otherErr = other.Append(ctx, sessiontest.User("other session is fine"))
					closeErr = s.Close(ctx)
				})
				return nil
			}
			if phase == "veto" {
				bus.Veto.On(h.root.Context(), func(ctx context.Context, d bus.Dispatch) error {
					if c, ok := d.Payload.(live.Commit); ok {
						return fn(ctx, c)
					}
					return nil
				})
			} else {
				live.Committed.On(h.root.Context(), fn)
			}
			_, err := s.Append(h.ctx, sessiontest.User("outer"))
			require.NoError(t, err)
			require.ErrorIs(t, inner, session.ErrReentrantAppend)
			require.ErrorIs(t, closeErr, session.ErrReentrantAppend)
			require.NoError(t, otherErr)
			assert.Equal(t, 1, s.Len())
			assert.Equal(t, 1, other.Len())
		})
	}
}

func TestConcurrentAppendsWhileObservedAreSerialized(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	var mu sync.Mutex
	var seen []int64
	live.Committed.On(h.root.Context(), func(ctx context.Context, c live.Commit) error {
		_ = c.Session().Messages() // reading the observed session does not deadlock
		mu.Lock()
		seen = append(seen, c.Record().Seq())
		mu.Unlock()
		return nil
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, err := s.Append(h.ctx, sessiontest.User("x"))
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, 400)
	for i, seq := range seen {
		require.Equal(t, int64(i), seq, "observers see commits in seq order")
	}
	require.NoError(t, session.Validate(s.Records()))
	fresh, err := session.DeriveMessages(s.Records())
	require.NoError(t, err)
	require.Equal(t, fresh, s.Messages())
}

// The context an append's listeners get is the caller's, marked: its
// values, deadline and Done are the caller's, and neither it nor one
// derived from it can append to the session.
func TestListenersGetTheCallersContext(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	type key struct{}
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.WithValue(h.ctx, key{}, "v"), deadline)
	defer cancel()
	var checked, observed int
	bus.Veto.On(h.root.Context(), func(c context.Context, d bus.Dispatch) error {
		if _, ok := d.Payload.(live.Commit); !ok {
			return nil
		}
		checked++
		assert.Equal(t, "v", c.Value(key{}))
		got, ok := c.Deadline()
		assert.True(t, ok)
		assert.True(t, got.Equal(deadline))
		assert.NoError(t, c.Err())
		assert.NotNil(t, c.Done())
		_, err := s.Append(context.WithValue(c, key{}, "w"), sessiontest.User("inner"))
		assert.ErrorIs(t, err, session.ErrReentrantAppend)
		return nil
	})
	live.Committed.On(h.root.Context(), func(c context.Context, cm live.Commit) error {
		observed++
		assert.Equal(t, "v", c.Value(key{}))
		assert.NoError(t, c.Err())
		_, err := s.Append(c, sessiontest.User("inner"))
		assert.ErrorIs(t, err, session.ErrReentrantAppend)
		return nil
	})
	_, err := s.Append(ctx, sessiontest.User("outer"))
	require.NoError(t, err)
	assert.Equal(t, 1, checked)
	assert.Equal(t, 1, observed)
	assert.Equal(t, 1, s.Len())
}

// Records share their lines' memory (see session.LogState.Stage): reading
// the committed ones while others are appended is no race, and every line
// stays what it was.
func TestReadsWhileAppending(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		lines := map[int64]string{}
		for {
			for r := range s.Backward() {
				line := string(r.AppendLine(nil))
				if was, ok := lines[r.Seq()]; ok && was != line {
					t.Errorf("seq %d: line changed from %q to %q", r.Seq(), was, line)
				}
				lines[r.Seq()] = line
			}
			select {
			case <-done:
				return
			default:
			}
		}
	})
	for i := range 300 {
		_, err := s.Append(h.ctx, sessiontest.User(strings.Repeat("y", i%200)))
		require.NoError(t, err)
	}
	close(done)
	wg.Wait()
}

func TestScopedListenersSeeOnlyTheirSession(t *testing.T) {
	h := newHarness(t)
	a, b := h.create(), h.create()
	var got []string
	live.Committed.On(a.Context(), func(ctx context.Context, c live.Commit) error {
		got = append(got, c.Session().ID())
		return nil
	})
	h.appendAll(a, sessiontest.User("1"))
	h.appendAll(b, sessiontest.User("2"))
	assert.Equal(t, []string{a.ID()}, got)
}

func TestAppendRefusesCancelledContextAndClosedSession(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	_, err := s.Append(ctx, sessiontest.User("a"))
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, s.Close(h.ctx))
	require.NoError(t, s.Close(h.ctx), "closing twice is fine")
	_, err = s.Append(h.ctx, sessiontest.User("a"))
	require.ErrorIs(t, err, session.ErrClosed)
	assert.Empty(t, h.m.Live())
}

func TestSessionHeaderIsLatestSnapshot(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	_, ok := s.Header()
	assert.False(t, ok)
	h.appendAll(s,
		session.Event{Type: session.TypeTurnStart, Turn: 1},
		session.Event{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: session.Header{Model: "a", Tools: []session.ToolSpec{}}}},
		session.Event{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderChange, Header: session.Header{Model: "b", System: "s"}}},
	)
	got, ok := s.Header()
	require.True(t, ok)
	assert.Equal(t, session.Header{Model: "b", System: "s"}, got)
	want, _ := session.DeriveHeader(s.Records())
	assert.Equal(t, want, got)
}

func TestSessionInfoIsACopy(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	h.appendAll(s, sessiontest.User("a"))
	f, err := h.m.Fork(h.ctx, s.ID(), 0)
	require.NoError(t, err)
	info := f.Info()
	info.Parent.ID = "changed"
	assert.Equal(t, s.ID(), f.Info().Parent.ID)
}

// Ranging over Backward allocates nothing: it inlines into the loop, so
// its iterator and the loop's body stay on the stack.
func TestBackwardDoesNotAllocate(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	h.appendAll(s, sessiontest.User("a"), sessiontest.User("b"))
	n := testing.AllocsPerRun(100, func() {
		k := 0
		for r := range s.Backward() {
			if k += int(r.Seq()); k > 100 {
				break
			}
		}
	})
	assert.Zero(t, n)
}

// A Commit, like a record, is a value holding one reference no exported
// name reaches: a listener can keep it and read it, but cannot replace
// the record the other listeners, the invariants plugin and the log see.
func TestCommitIsOneHiddenReference(t *testing.T) {
	typ := reflect.TypeFor[live.Commit]()
	require.Equal(t, reflect.Struct, typ.Kind())
	require.Equal(t, 1, typ.NumField())
	assert.False(t, typ.Field(0).IsExported())
	assert.Equal(t, reflect.Pointer, typ.Field(0).Type.Kind())
}
