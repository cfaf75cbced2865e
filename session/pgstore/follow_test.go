package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestFollowConformance(t *testing.T) {
	sessiontest.RunFollow(t, func(t *testing.T) func(t *testing.T) session.Store {
		schema := pgtest.Schema(t)
		return func(t *testing.T) session.Store { return pgtest.StoreIn(t, schema) }
	})
}

type followed struct {
	rec *session.Record
	err error
	at  time.Time
}

func TestFollowYieldsTheLogThenEachAppendAsItCommits(t *testing.T) {
	schema := pgtest.Schema(t)
	writer, reader := pgtest.StoreIn(t, schema), pgtest.StoreIn(t, schema)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, writer.Create(ctx, session.Info{ID: "s", Created: epoch}))
	require.NoError(t, writer.Create(ctx, session.Info{ID: "other", Created: epoch}))
	recs := turnRecords(nil, "q", "a", false)
	require.NoError(t, writer.Append(ctx, "s", 0, recs[:3]))

	got := make(chan followed, 100)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for r, err := range reader.Follow(ctx, "s", 0) {
			got <- followed{r, err, time.Now()}
		}
	}()
	next := func() followed {
		select {
		case f := <-got:
			require.NoError(t, f.err)
			return f
		case <-time.After(5 * time.Second):
			t.Fatal("nothing followed")
			return followed{}
		}
	}
	for i := range 3 {
		require.Equal(t, string(recs[i].Bytes()), string(next().rec.Bytes()))
	}
	// Appends to another session wake nobody up for nothing.
	require.NoError(t, writer.Append(ctx, "other", 0, recs[:3]))
	for i := 3; i < len(recs); i++ {
		time.Sleep(20 * time.Millisecond)
		at := time.Now()
		require.NoError(t, writer.Append(ctx, "s", int64(i), recs[i:i+1]))
		f := next()
		require.Equal(t, string(recs[i].Bytes()), string(f.rec.Bytes()))
		// The poll is every 2s; a notification is much faster.
		require.Less(t, f.at.Sub(at), time.Second, "seq %d", i)
	}
	cancel()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end with its context")
	}
	require.Empty(t, got, "no error after the context ended")
}

func TestFollowFromASeq(t *testing.T) {
	s := pgtest.Store(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, s.Create(ctx, session.Info{ID: "s", Created: epoch}))
	recs := turnRecords(nil, "q", "a", false)
	require.NoError(t, s.Append(ctx, "s", 0, recs))
	for r, err := range s.Follow(ctx, "s", 5) {
		require.NoError(t, err)
		require.Equal(t, int64(5), r.Seq())
		break
	}
}

func TestFollowAnUnknownSessionIsErrNotFound(t *testing.T) {
	s := pgtest.Store(t)
	n := 0
	for _, err := range s.Follow(context.Background(), "nope", 0) {
		require.ErrorIs(t, err, session.ErrNotFound)
		n++
	}
	require.Equal(t, 1, n)
}
