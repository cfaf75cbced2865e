package sessiontest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// RunFollow runs the conformance suite of [session.Follower]. newBacking
// makes an empty backing for one subtest and returns open, which returns a
// new handle on it at each call (as another process would open it); the
// handles must be Followers, and the suite closes those that are
// io.Closers when the subtest ends.
func RunFollow(t *testing.T, newBacking func(t *testing.T) (open func(t *testing.T) session.Store)) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open func(t *testing.T) session.Store)
	}{
		{"UnknownSessionIsErrNotFound", testFollowUnknown},
		{"StoredRecordsThenEachAppended", testFollowAppended},
		{"AppendsOfAnotherHandleAreSeen", testFollowOtherHandle},
		{"FromPastTheEndWaitsForIt", testFollowFromPastEnd},
		{"StoppingTheLoopEndsIt", testFollowBreak},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			open := newBacking(t)
			c.fn(t, func(t *testing.T) session.Store {
				s := open(t)
				require.Implements(t, (*session.Follower)(nil), s)
				if cl, ok := s.(io.Closer); ok {
					t.Cleanup(func() { assert.NoError(t, cl.Close()) })
				}
				return s
			})
		})
	}
}

// followWait bounds the wait for a record that must come.
const followWait = 30 * time.Second

type followed struct {
	recs chan session.Record
	err  chan error // the error the loop ended with, nil for none
}

// follow runs Follow in a goroutine until ctx is done.
func follow(ctx context.Context, s session.Store, id string, from int64) *followed {
	f := &followed{recs: make(chan session.Record, 64), err: make(chan error, 1)}
	go func() {
		var end error
		for r, err := range s.(session.Follower).Follow(ctx, id, from) {
			if err != nil {
				end = err
				break
			}
			f.recs <- r
		}
		f.err <- end
	}()
	return f
}

// expect receives want, in order.
func (f *followed) expect(t *testing.T, want []session.Record) {
	t.Helper()
	for _, w := range want {
		select {
		case r := <-f.recs:
			require.Equal(t, w.Seq(), r.Seq())
			require.Equal(t, string(w.Bytes()), string(r.Bytes()))
		case err := <-f.err:
			t.Fatalf("the follow ended at seq %d: %v", w.Seq(), err)
		case <-time.After(followWait):
			t.Fatalf("seq %d did not come", w.Seq())
		}
	}
}

// end checks the loop ended without an error and yielded nothing more.
func (f *followed) end(t *testing.T) {
	t.Helper()
	select {
	case err := <-f.err:
		require.NoError(t, err)
	case <-time.After(followWait):
		t.Fatal("the follow did not end with its context")
	}
	assert.Empty(t, f.recs)
}

// releaseWriter lets go of the writer a create or an append took, so that
// another handle may write the session.
func releaseWriter(t *testing.T, s session.Store, id string) {
	t.Helper()
	if r, ok := s.(session.Releaser); ok {
		require.NoError(t, r.Release(id))
	}
}

func testFollowUnknown(t *testing.T, open func(t *testing.T) session.Store) {
	s := open(t)
	n := 0
	for r, err := range s.(session.Follower).Follow(context.Background(), "nope", 0) {
		n++
		require.True(t, r.IsZero())
		require.ErrorIs(t, err, session.ErrNotFound)
	}
	assert.Equal(t, 1, n, "one error, then the end")
}

func testFollowAppended(t *testing.T, open func(t *testing.T) session.Store) {
	ctx := context.Background()
	s := open(t)
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := Turn(t, 0, 1)
	require.NoError(t, s.Append(ctx, "s1", 0, recs[:5]))
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := follow(fctx, s, "s1", 2)
	f.expect(t, recs[2:5])
	// Mid-step: a buffering store has not synced these yet.
	require.NoError(t, s.Append(ctx, "s1", 5, recs[5:7]))
	f.expect(t, recs[5:7])
	require.NoError(t, s.Append(ctx, "s1", 7, recs[7:]))
	f.expect(t, recs[7:])
	cancel()
	f.end(t)
}

func testFollowOtherHandle(t *testing.T, open func(t *testing.T) session.Store) {
	ctx := context.Background()
	writer, reader := open(t), open(t)
	require.NoError(t, writer.Create(ctx, info("s1")))
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := follow(fctx, reader, "s1", 0)
	recs := Turn(t, 0, 1)
	require.NoError(t, writer.Append(ctx, "s1", 0, recs[:3]))
	f.expect(t, recs[:3])
	require.NoError(t, writer.Append(ctx, "s1", 3, recs[3:]))
	f.expect(t, recs[3:])
	// Another writer takes the session over: the follow goes on.
	releaseWriter(t, writer, "s1")
	third := open(t)
	more := Turn(t, 17, 2)
	require.NoError(t, third.Append(ctx, "s1", 17, more))
	f.expect(t, more)
	cancel()
	f.end(t)
}

func testFollowFromPastEnd(t *testing.T, open func(t *testing.T) session.Store) {
	ctx := context.Background()
	s := open(t)
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := Turn(t, 0, 1)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := follow(fctx, s, "s1", 10)
	require.NoError(t, s.Append(ctx, "s1", 0, recs))
	f.expect(t, recs[10:])
	cancel()
	f.end(t)
}

func testFollowBreak(t *testing.T, open func(t *testing.T) session.Store) {
	ctx := context.Background()
	s := open(t)
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := Turn(t, 0, 1)
	require.NoError(t, s.Append(ctx, "s1", 0, recs))
	var got []int64
	for r, err := range s.(session.Follower).Follow(ctx, "s1", 0) {
		require.NoError(t, err)
		got = append(got, r.Seq())
		if len(got) == 3 {
			break
		}
	}
	assert.Equal(t, []int64{0, 1, 2}, got, "the loop ends at its break, with a live context")
}
