package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore"
)

func storedLen(t *testing.T, s *pgstore.Store) int {
	t.Helper()
	log, err := s.Load(context.Background(), "s")
	require.NoError(t, err)
	return len(log.Records)
}

// A turn's last records handed over under a claim are written by the
// claim's Finish, in its statement: the turn's end, the job's outcome
// and the lease's release commit together.
func TestFinishWritesTheDeferredRecords(t *testing.T) {
	ctx := context.Background()
	w, other := twoStores(t)
	_, _, err := w.Enqueue(ctx, session.Job{Session: "s", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
	c := claimOf(t, w, "w")
	require.NoError(t, c.Start(ctx, 0))
	recs := turnRecords(nil, "q", "a", false)
	require.NoError(t, w.Append(ctx, "s", 0, recs[:4]))
	require.NoError(t, w.AppendDeferred(ctx, "s", 4, recs[4:6]))
	require.NoError(t, w.AppendDeferred(ctx, "s", 6, recs[6:]))
	assert.Equal(t, 4, storedLen(t, other), "kept for the claim's end")
	require.ErrorIs(t, w.AppendDeferred(ctx, "s", 4, recs[4:5]), session.ErrConflict)

	require.NoError(t, c.Finish(ctx, session.Outcome{}))
	assert.Equal(t, len(recs), storedLen(t, other))
	jobs, err := other.Jobs(ctx, "s")
	require.NoError(t, err)
	assert.Empty(t, jobs)
	release, err := other.Lease(ctx, "s", false)
	require.NoError(t, err, "the finish released the lease")
	release()
}

// A claim whose lease was lost cannot finish with deferred records: they
// are fenced, and the job is the new claim's.
func TestAFencedFinishWritesNothing(t *testing.T) {
	ctx := context.Background()
	w1, w2 := twoStores(t)
	_, _, err := w1.Enqueue(ctx, session.Job{Session: "s", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
	c1 := claimOf(t, w1, "w1")
	require.NoError(t, c1.Start(ctx, 0))
	recs := turnRecords(nil, "q", "a", false)
	require.NoError(t, w1.AppendDeferred(ctx, "s", 0, recs))
	_, err = pgstore.PauseLease(ctx, w1, "s")
	require.NoError(t, err)
	c2 := claimOf(t, w2, "w2")
	require.ErrorIs(t, c1.Finish(ctx, session.Outcome{}), session.ErrFenced)
	assert.Zero(t, storedLen(t, w2))
	require.NoError(t, c2.Finish(ctx, session.Outcome{}))
}

// Outside a claim, a deferred append is an append, and a Flush writes
// what a claim kept.
func TestAppendDeferredOutsideAClaimAppends(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	recs := turnRecords(nil, "q", "a", false)
	require.NoError(t, a.AppendDeferred(ctx, "s", 0, recs[:3]))
	assert.Equal(t, 3, storedLen(t, b))
	release, err := a.Lease(ctx, "s", false)
	require.NoError(t, err)
	require.NoError(t, a.AppendDeferred(ctx, "s", 3, recs[3:5]))
	assert.Equal(t, 5, storedLen(t, b), "a lease's end is no statement of the store's")
	release()

	_, _, err = a.Enqueue(ctx, session.Job{Session: "s", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
	c := claimOf(t, a, "w")
	require.NoError(t, a.AppendDeferred(ctx, "s", 5, recs[5:]))
	assert.Equal(t, 5, storedLen(t, b))
	require.NoError(t, a.Flush(ctx, "s"))
	assert.Equal(t, len(recs), storedLen(t, b))
	require.NoError(t, c.Finish(ctx, session.Outcome{}))
}
