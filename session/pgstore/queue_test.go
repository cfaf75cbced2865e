package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// queueTTL is the lease TTL of the queue's tests: a crashed worker's job
// is claimed again after it.
const queueTTL = 2 * time.Second

// queueHarness gives the queue's suites (RunQueue, RunDelete) handles on
// one schema, as processes sharing a database have.
var queueHarness = sessiontest.QueueHarness{
	New: func(t *testing.T) func(t *testing.T) session.Store {
		schema := pgtest.Schema(t)
		return func(t *testing.T) session.Store {
			return pgtest.StoreIn(t, schema, pgstore.WithLeaseTTL(queueTTL))
		}
	},
	Crash: func(t *testing.T, s session.Store) { pgstore.Crash(s.(*pgstore.Store)) },
}

func TestQueueConformance(t *testing.T) { sessiontest.RunQueue(t, queueHarness) }

// claimOf claims a job within claimTimeout.
func claimOf(t *testing.T, s *pgstore.Store, worker string) session.Claim {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := s.Claim(ctx, worker)
	require.NoError(t, err)
	return c
}

// Two stores, as two worker processes, with several goroutines each, run
// the jobs of many sessions: each job runs once, a session's in order,
// each appending its turn under the claim's lease.
func TestQueueTwoProcessesRunEveryJobOnceInOrder(t *testing.T) {
	const sessions, jobsPer, goroutines = 12, 4, 4
	schema := pgtest.Schema(t)
	api := pgtest.StoreIn(t, schema)
	workers := []*pgstore.Store{pgtest.StoreIn(t, schema, pgstore.WithHolder("W1")), pgtest.StoreIn(t, schema, pgstore.WithHolder("W2"))}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var sids []string
	for i := range sessions {
		id := fmt.Sprintf("s%02d", i)
		sids = append(sids, id)
		require.NoError(t, api.Create(ctx, session.Info{ID: id, Created: epoch}))
	}
	for n := range jobsPer {
		for _, id := range sids {
			_, pos, err := api.Enqueue(ctx, session.Job{Session: id, Kind: "turn", Input: []byte(fmt.Sprintf(`{"prompt":"p%d"}`, n))})
			require.NoError(t, err)
			require.Equal(t, n, pos)
		}
	}
	var mu sync.Mutex
	runs := map[string]int{} // job id → times run
	left := sessions * jobsPer
	var wg sync.WaitGroup
	for wi, w := range workers {
		for g := range goroutines {
			wg.Go(func() {
				for {
					c, err := w.Claim(ctx, fmt.Sprintf("w%d.%d", wi, g))
					if err != nil {
						assert.ErrorIs(t, err, context.Canceled)
						return
					}
					j := c.Job()
					var prompt struct{ Prompt string }
					if !assert.NoError(t, json.Unmarshal(j.Input, &prompt)) {
						return
					}
					// The turn, appended under the claim's lease: the
					// session's log tells the order its jobs ran in.
					log, err := w.Load(ctx, j.Session)
					if !assert.NoError(t, err) {
						return
					}
					assert.NoError(t, c.Start(ctx, int64(len(log.Records))))
					assert.NoError(t, w.Append(ctx, j.Session, int64(len(log.Records)), turnRecords(log.Records, prompt.Prompt, "ok", false)))
					assert.NoError(t, c.Finish(ctx, session.Outcome{}))
					mu.Lock()
					runs[j.ID]++
					left--
					if left == 0 {
						cancel()
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	require.Zero(t, left, "every job ran")
	assert.Len(t, runs, sessions*jobsPer)
	for id, n := range runs {
		assert.Equal(t, 1, n, "job %s", id)
	}
	for _, id := range sids {
		log, err := api.Load(context.Background(), id)
		require.NoError(t, err)
		var prompts []string
		for _, r := range log.Records {
			if r.Type() == session.TypeUserMessage {
				var m session.UserMessage
				require.NoError(t, json.Unmarshal(r.Data(), &m))
				prompts = append(prompts, m.Content)
			}
		}
		assert.Equal(t, []string{"p0", "p1", "p2", "p3"}, prompts, "session %s: its jobs in order", id)
		requireVerified(t, encode(log.Info, log.Records))
		jobs, err := api.Jobs(context.Background(), id)
		require.NoError(t, err)
		assert.Empty(t, jobs)
	}
}

// A session leased outside the queue (a CLI turn) is not claimed; the
// waiting claim is woken by the lease's release, in another process.
func TestQueueClaimWaitsForALeaseHeldOutsideTheQueue(t *testing.T) {
	ctx := context.Background()
	cli, worker := twoStores(t)
	release, err := cli.Lease(ctx, "s", false)
	require.NoError(t, err)
	job, _, err := cli.Enqueue(ctx, session.Job{Session: "s", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
	got := make(chan session.Claim, 1)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go func() {
		c, err := worker.Claim(cctx, "w")
		assert.NoError(t, err)
		got <- c
	}()
	// Appends of the CLI's turn go on while the claim waits.
	recs := turnRecords(nil, "from the cli", "ok", false)
	require.NoError(t, cli.Append(ctx, "s", 0, recs))
	jobs, err := worker.Jobs(ctx, "s")
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, session.JobQueued, jobs[0].State)
	select {
	case c := <-got:
		t.Fatalf("claimed %+v while the session was leased", c.Job())
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	release()
	c := <-got
	require.NotNil(t, c)
	// The safety poll is 5s; only the release's notification is this fast.
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Equal(t, job.ID, c.Job().ID)
	assert.Greater(t, worker.Epoch("s"), int64(1), "the claim took a lease after the CLI's")
	require.NoError(t, worker.Append(ctx, "s", int64(len(recs)), turnRecords(recs, "from the queue", "ok", false)))
	require.NoError(t, c.Finish(ctx, session.Outcome{}))
}

// A worker paused past its lease's expiry loses its job to another worker:
// its appends are fenced, its Finish leaves the job to the new claim,
// which keeps the job's Base and counts the attempt.
func TestQueuePausedWorkerIsFencedAndItsJobContinues(t *testing.T) {
	ctx := context.Background()
	w1, w2 := twoStores(t)
	job, _, err := w1.Enqueue(ctx, session.Job{Session: "s", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
	c1 := claimOf(t, w1, "w1")
	e1 := w1.Epoch("s")
	require.Positive(t, e1)
	require.NoError(t, c1.Start(ctx, 0))
	recs := turnRecords(nil, "q", "", true)
	require.NoError(t, w1.Append(ctx, "s", 0, recs[:4]))

	resume, err := pgstore.PauseLease(ctx, w1, "s")
	require.NoError(t, err)
	c2 := claimOf(t, w2, "w2")
	assert.Equal(t, job.ID, c2.Job().ID)
	assert.Equal(t, int64(0), c2.Job().Base)
	assert.Equal(t, 2, c2.Job().Attempts)
	assert.Greater(t, w2.Epoch("s"), e1)

	require.ErrorIs(t, w1.Append(ctx, "s", 4, recs[4:]), session.ErrFenced)
	require.NoError(t, resume())
	require.ErrorIs(t, w1.Append(ctx, "s", 4, recs[4:]), session.ErrFenced, "still, once it noticed")
	require.ErrorIs(t, c1.Start(ctx, 4), session.ErrFenced)
	require.ErrorIs(t, c1.Finish(ctx, session.Outcome{}), session.ErrFenced)
	assert.Zero(t, w1.Epoch("s"), "the claim ended")
	select {
	case <-c1.Cancelled():
		t.Fatal("a fenced claim is not a cancelled one")
	default:
	}

	require.NoError(t, w2.Append(ctx, "s", 4, recs[4:]), "the new claim appends")
	jobs, err := w1.Jobs(ctx, "s")
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, session.JobRunning, jobs[0].State)
	assert.Equal(t, "w2", jobs[0].Worker)
	require.NoError(t, c2.Finish(ctx, session.Outcome{}))
}

// Close ends a waiting Claim and hands a running claim's job back to the
// queue: its lease is released, so another worker claims it at once.
func TestQueueCloseEndsWaitingClaimsAndFreesRunningOnes(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	_, _, err := a.Enqueue(ctx, session.Job{Session: "s", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
	c := claimOf(t, a, "a")
	waiting := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go func() {
		_, err := a.Claim(wctx, "a2")
		waiting <- err
	}()
	require.NoError(t, a.Close())
	require.ErrorContains(t, <-waiting, "store closed")
	select {
	case <-c.Cancelled():
		t.Fatal("closing is not cancelling")
	default:
	}
	again := claimOf(t, b, "b")
	assert.Equal(t, c.Job().ID, again.Job().ID)
	assert.Equal(t, 2, again.Job().Attempts)
	require.NoError(t, again.Finish(ctx, session.Outcome{}))
}
