package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore"
)

// followInto follows session s of st from seq 0 into a channel, until the
// test ends.
func followInto(t *testing.T, st *pgstore.Store) <-chan session.Record {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan session.Record, 64)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for r, err := range st.Follow(ctx, "s", 0) {
			if err != nil {
				return
			}
			out <- r
		}
	}()
	return out
}

// got reads the seqs of the next n records a follower yields (fewer if
// it yields no more for a minute), then what else it yields within
// 300 ms.
func got(ch <-chan session.Record, n int) []int64 {
	var seqs []int64
	wait := time.Minute
	for {
		if len(seqs) >= n {
			wait = 300 * time.Millisecond
		}
		select {
		case r := <-ch:
			seqs = append(seqs, r.Seq())
		case <-time.After(wait):
			return seqs
		}
	}
}

// Staged records are stored (a process that dies leaves them; the next
// holder loads them) but no follower is given them until a synchronous
// commit of the session made them durable: the next append, or a flush.
func TestStagedRecordsReachFollowersOnceDurable(t *testing.T) {
	pgstore.SetFollowStaged(t, time.Hour)
	ctx := context.Background()
	w, other := twoStores(t)
	recs := turnRecords(nil, "q", "a", false)
	require.GreaterOrEqual(t, len(recs), 6)
	follow := followInto(t, other)
	release, err := w.Lease(ctx, "s", false)
	require.NoError(t, err)
	defer release()

	require.NoError(t, w.Append(ctx, "s", 0, recs[:1]))
	assert.Equal(t, []int64{0}, got(follow, 1))
	require.NoError(t, w.AppendStaged(ctx, "s", 1, recs[1:3]))
	assert.Equal(t, 3, storedLen(t, other), "stored, visible to a load")
	assert.Empty(t, got(follow, 0), "not durable yet: no follower has them")
	require.ErrorIs(t, w.AppendStaged(ctx, "s", 1, recs[1:2]), session.ErrConflict, "checked by the seq as any append")

	require.NoError(t, w.Append(ctx, "s", 3, recs[3:4]))
	assert.Equal(t, []int64{1, 2, 3}, got(follow, 3), "durable with the next append")

	require.NoError(t, w.AppendStaged(ctx, "s", 4, recs[4:6]))
	assert.Empty(t, got(follow, 0))
	require.NoError(t, other.Flush(ctx, "s"), "any process's flush makes them durable")
	assert.Equal(t, []int64{4, 5}, got(follow, 2))

	// A follower that starts while records are staged reads up to them.
	require.NoError(t, w.AppendStaged(ctx, "s", 6, recs[6:7]))
	late := followInto(t, other)
	assert.Equal(t, []int64{0, 1, 2, 3, 4, 5}, got(late, 6))
}

// A follower that waits for staged records in vain (their writer died)
// makes them durable itself after a while, so that a reader of the log up
// to its tail is not stuck until another holder comes.
func TestAFollowerMakesStaleStagedRecordsDurable(t *testing.T) {
	pgstore.SetFollowStaged(t, 200*time.Millisecond)
	ctx := context.Background()
	w, other := twoStores(t)
	recs := turnRecords(nil, "q", "a", false)
	follow := followInto(t, other)
	require.NoError(t, w.AppendStaged(ctx, "s", 0, recs[:3]))
	pgstore.Crash(w) // the writer dies
	assert.Equal(t, []int64{0, 1, 2}, got(follow, 3))
}

// A staged append under a lease is fenced by the lease's epoch, as any
// append is.
func TestAStagedAppendIsFenced(t *testing.T) {
	ctx := context.Background()
	w1, w2 := twoStores(t)
	recs := turnRecords(nil, "q", "a", false)
	release1, err := w1.Lease(ctx, "s", false)
	require.NoError(t, err)
	defer release1()
	_, err = pgstore.PauseLease(ctx, w1, "s")
	require.NoError(t, err)
	release2, err := w2.Lease(ctx, "s", false)
	require.NoError(t, err)
	defer release2()
	require.ErrorIs(t, w1.AppendStaged(ctx, "s", 0, recs[:2]), session.ErrFenced)
	assert.Zero(t, storedLen(t, w2))
}
