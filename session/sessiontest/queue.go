package sessiontest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// QueueHarness is what [RunQueue] needs of a store: several handles on one
// backing, as several processes sharing it would have, and a way to kill
// one of them.
type QueueHarness struct {
	// New makes an empty backing for one subtest (a directory, a
	// database) and returns open, which returns a new handle on that
	// backing at each call, as another process opening it would. Every
	// handle must implement [session.Queue]. The suite closes the handles
	// it did not crash (those that are io.Closers) when the subtest ends.
	New func(t *testing.T) (open func(t *testing.T) session.Store)
	// Crash drops handle s as a dying process would: no Finish, no
	// Release; its leases go away (its file locks are dropped, or its
	// leases expire after a short TTL the harness chose). The suite does
	// not use or close s afterwards.
	Crash func(t *testing.T, s session.Store)
}

// RunQueue runs the conformance suite of [session.Queue] and
// [session.Claim]. The subtests about leases are skipped for stores that
// are not [session.Leaser]s.
func RunQueue(t *testing.T, h QueueHarness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, b *backing)
	}{
		{"EnqueueOnUnknownSessionIsErrNotFound", testEnqueueUnknown},
		{"PositionsCountUnfinishedJobsAhead", testPositions},
		{"JobsAreOldestFirstWithStates", testJobs},
		{"InputAndKindRoundTripExactly", testInputRoundTrip},
		{"ClaimTakesOldestFirstAndOneJobPerSession", testClaimOrder},
		{"OtherSessionsAreClaimedConcurrently", testClaimConcurrentSessions},
		{"ClaimBlocksUntilEnqueue", testClaimBlocks},
		{"ClaimHonoursContext", testClaimContext},
		{"ClaimHoldsTheSessionsLease", testClaimLease},
		{"StartRecordsBaseOnce", testStartBase},
		{"ReleaseHandsTheJobBack", testQueueRelease},
		{"FinishRemovesTheJob", testFinish},
		{"CancelDropsQueuedAndSignalsRunning", testCancel},
		{"ReleaseAfterCancelDropsTheJob", testReleaseAfterCancel},
		{"CrashedWorkersJobIsClaimedAgain", testCrash},
		{"QueueSurvivesReopening", testDurable},
		{"JobTellsStateAndOutcome", testJobOutcome},
		{"CancelledJobsAreKeptCancelled", testJobCancelled},
		{"FinishRefusesAnUnfinishedState", testFinishState},
		{"OneJobPerCall", testOneJobPerCall},
		{"ConcurrentEnqueuesOfOneCallQueueOne", testOneJobPerCallConcurrent},
		{"ConcurrentWorkersRunEveryJobOnceInOrder", testQueueConcurrency},
		{"DepthCountsJobsByKindAndState", testDepth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &backing{h: h, open: h.New(t)}
			c.fn(t, b)
		})
	}
}

// backing is one subtest's backing store and its handles.
type backing struct {
	h    QueueHarness
	open func(t *testing.T) session.Store
}

// handle opens a handle, closed when the test ends unless crashed.
type handle struct {
	session.Store
	session.Queue
	crashed bool
}

func (b *backing) handle(t *testing.T) *handle {
	t.Helper()
	s := b.open(t)
	require.NotNil(t, s)
	q, ok := s.(session.Queue)
	require.True(t, ok, "%T is not a session.Queue", s)
	h := &handle{Store: s, Queue: q}
	t.Cleanup(func() {
		if c, ok := s.(io.Closer); ok && !h.crashed {
			assert.NoError(t, c.Close())
		}
	})
	return h
}

func (b *backing) crash(t *testing.T, h *handle) {
	t.Helper()
	h.crashed = true
	b.h.Crash(t, h.Store)
}

// create makes sessions through h and lets go of any writer the create
// took (jsonl keeps the file it created locked), as a server's API would
// after creating a session for its workers.
func (h *handle) create(t *testing.T, ids ...string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		require.NoError(t, h.Create(ctx, info(id)))
		if r, ok := h.Store.(session.Releaser); ok {
			require.NoError(t, r.Release(id))
		}
	}
}

func (h *handle) enqueue(t *testing.T, id, input string) (session.Job, int) {
	t.Helper()
	job, pos, err := h.Enqueue(context.Background(), session.Job{Session: id, Kind: "turn", Input: []byte(input)})
	require.NoError(t, err)
	require.NotEmpty(t, job.ID)
	return job, pos
}

// claimTimeout bounds a claim that must succeed: long enough for a
// crashed holder's short lease to expire.
const claimTimeout = 30 * time.Second

func (h *handle) claim(t *testing.T, worker string) session.Claim {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	c, err := h.Claim(ctx, worker)
	require.NoError(t, err)
	require.NotNil(t, c)
	return c
}

// noClaim checks that nothing is claimable now: a claim bounded by a short
// timeout ends with it. (A store that claimed something by mistake would
// return it, whatever the timeout.)
func (h *handle) noClaim(t *testing.T, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	c, err := h.Claim(ctx, "idle")
	if c != nil {
		t.Fatalf("%s: claimed %+v", why, c.Job())
	}
	require.ErrorIs(t, err, context.DeadlineExceeded, why)
}

func (h *handle) jobs(t *testing.T, id string) []session.Job {
	t.Helper()
	jobs, err := h.Jobs(context.Background(), id)
	require.NoError(t, err)
	return jobs
}

func ids(jobs []session.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func finish(t *testing.T, c session.Claim) {
	t.Helper()
	require.NoError(t, c.Finish(context.Background(), session.Outcome{}))
}

func release(t *testing.T, c session.Claim) {
	t.Helper()
	require.NoError(t, c.Release(context.Background()))
}

func testEnqueueUnknown(t *testing.T, b *backing) {
	ctx := context.Background()
	h := b.handle(t)
	_, _, err := h.Enqueue(ctx, session.Job{Session: "nope", Kind: "turn", Input: []byte(`{}`)})
	require.ErrorIs(t, err, session.ErrNotFound)
	_, err = h.Cancel(ctx, "nope")
	require.ErrorIs(t, err, session.ErrNotFound)
	h.noClaim(t, "a refused job is not queued")
}

func testPositions(t *testing.T, b *backing) {
	h := b.handle(t)
	h.create(t, "s1", "s2")
	for want := range 3 {
		_, pos := h.enqueue(t, "s1", `{}`)
		assert.Equal(t, want, pos)
	}
	_, pos := h.enqueue(t, "s2", `{}`)
	assert.Equal(t, 0, pos, "another session's jobs are not ahead")

	c := h.claim(t, "w")
	require.Equal(t, "s1", c.Job().Session)
	_, pos = h.enqueue(t, "s1", `{}`)
	assert.Equal(t, 3, pos, "the running job counts")
	finish(t, c)
	_, pos = h.enqueue(t, "s1", `{}`)
	assert.Equal(t, 3, pos, "a finished job does not")
}

func testJobs(t *testing.T, b *backing) {
	h, other := b.handle(t), b.handle(t)
	h.create(t, "s1", "s2", "s3")
	before := time.Now().Add(-time.Minute)
	var want []string
	for i := range 3 {
		j, _ := h.enqueue(t, "s1", fmt.Sprintf(`{"n":%d}`, i))
		want = append(want, j.ID)
		assert.Equal(t, "s1", j.Session)
		assert.Equal(t, int64(-1), j.Base)
		assert.Zero(t, j.Attempts)
		assert.Equal(t, session.JobQueued, j.State)
	}
	h.enqueue(t, "s2", `{}`)
	jobs := h.jobs(t, "s1")
	require.Equal(t, want, ids(jobs), "oldest first, only the session's")
	for i, j := range jobs {
		assert.Equal(t, "s1", j.Session)
		assert.Equal(t, "turn", j.Kind)
		assert.Equal(t, fmt.Sprintf(`{"n":%d}`, i), string(j.Input))
		assert.Equal(t, session.JobQueued, j.State)
		assert.Equal(t, int64(-1), j.Base)
		assert.Zero(t, j.Attempts)
		assert.Empty(t, j.Worker)
		assert.True(t, j.Enqueued.After(before), "enqueued %v", j.Enqueued)
	}
	assert.Empty(t, h.jobs(t, "s3"), "a session without jobs has none")

	c := other.claim(t, "w1")
	require.Equal(t, want[0], c.Job().ID)
	assert.Equal(t, session.JobRunning, c.Job().State)
	assert.Equal(t, 1, c.Job().Attempts)
	assert.Equal(t, "w1", c.Job().Worker)
	for _, q := range []*handle{h, other} {
		jobs = q.jobs(t, "s1")
		require.Equal(t, want, ids(jobs))
		assert.Equal(t, session.JobRunning, jobs[0].State, "seen by every handle")
		assert.Equal(t, "w1", jobs[0].Worker)
		assert.Equal(t, 1, jobs[0].Attempts)
		assert.Equal(t, session.JobQueued, jobs[1].State)
		assert.Equal(t, session.JobQueued, jobs[2].State)
	}
	finish(t, c)
}

func testInputRoundTrip(t *testing.T, b *backing) {
	h, other := b.handle(t), b.handle(t)
	h.create(t, "s1")
	inputs := []struct{ kind, input string }{
		{"turn", `{"prompt":"é \u2028 <&> \"q\""}`},
		{"decide", " {\"allow\" : true,\n\t\"reason\":\"\u00e9\"}  "},
		{"turn", `{"prompt":"` + strings.Repeat("long ", 20000) + `"}`},
		{"turn", `{}`},
	}
	for _, in := range inputs {
		_, _, err := h.Enqueue(context.Background(), session.Job{Session: "s1", Kind: in.kind, Input: []byte(in.input)})
		require.NoError(t, err)
	}
	jobs := other.jobs(t, "s1")
	require.Len(t, jobs, len(inputs))
	for i, in := range inputs {
		assert.Equal(t, in.kind, jobs[i].Kind)
		assert.Equal(t, in.input, string(jobs[i].Input))
	}
	for _, in := range inputs {
		c := other.claim(t, "w")
		assert.Equal(t, in.kind, c.Job().Kind)
		assert.Equal(t, in.input, string(c.Job().Input))
		finish(t, c)
	}
}

func testClaimOrder(t *testing.T, b *backing) {
	h := b.handle(t)
	h.create(t, "s1", "s2")
	b1, _ := h.enqueue(t, "s2", `{}`)
	a1, _ := h.enqueue(t, "s1", `{}`)
	a2, _ := h.enqueue(t, "s1", `{}`)

	c := h.claim(t, "w")
	assert.Equal(t, b1.ID, c.Job().ID, "the oldest job first")
	c2 := h.claim(t, "w")
	assert.Equal(t, a1.ID, c2.Job().ID)
	h.noClaim(t, "s1's second job waits for its first")
	finish(t, c)
	h.noClaim(t, "another session's finish frees nothing")
	finish(t, c2)
	c3 := h.claim(t, "w")
	assert.Equal(t, a2.ID, c3.Job().ID)
	finish(t, c3)
	h.noClaim(t, "everything ran")
}

func testClaimConcurrentSessions(t *testing.T, b *backing) {
	h1, h2, h3 := b.handle(t), b.handle(t), b.handle(t)
	h1.create(t, "s1", "s2")
	a, _ := h1.enqueue(t, "s1", `{}`)
	h1.enqueue(t, "s1", `{}`)
	bj, _ := h1.enqueue(t, "s2", `{}`)

	c1 := h2.claim(t, "w2")
	c2 := h3.claim(t, "w3")
	assert.Equal(t, a.ID, c1.Job().ID)
	assert.Equal(t, bj.ID, c2.Job().ID, "s2 runs beside s1, on another handle")
	h1.noClaim(t, "s1 runs on another handle")
	finish(t, c1)
	finish(t, c2)
}

func testClaimBlocks(t *testing.T, b *backing) {
	worker, api := b.handle(t), b.handle(t)
	api.create(t, "s1")
	ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	type result struct {
		c   session.Claim
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := worker.Claim(ctx, "w")
		got <- result{c, err}
	}()
	j, _ := api.enqueue(t, "s1", `{}`)
	r := <-got
	require.NoError(t, r.err, "woken by another handle's enqueue")
	assert.Equal(t, j.ID, r.c.Job().ID)

	go func() {
		c, err := worker.Claim(ctx, "w")
		got <- result{c, err}
	}()
	// The session's next job becomes claimable when the first finishes.
	j2, _ := api.enqueue(t, "s1", `{}`)
	finish(t, r.c)
	r = <-got
	require.NoError(t, r.err, "woken by a finish")
	assert.Equal(t, j2.ID, r.c.Job().ID)
	finish(t, r.c)
}

func testClaimContext(t *testing.T, b *backing) {
	h := b.handle(t)
	h.create(t, "s1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := h.Claim(ctx, "w")
	require.ErrorIs(t, err, context.Canceled, "a done context")

	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.Claim(ctx, "w")
		done <- err
	}()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled, "cancelled while waiting")

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	h.enqueue(t, "s1", `{}`)
	_, err = h.Claim(ctx, "w")
	require.ErrorIs(t, err, context.Canceled, "a done context claims nothing, even with a job there")
	c := h.claim(t, "w")
	assert.Equal(t, 1, c.Job().Attempts, "the job is still there, unclaimed")
	finish(t, c)
}

func testClaimLease(t *testing.T, b *backing) {
	h, other := b.handle(t), b.handle(t)
	leaser, ok := other.Store.(session.Leaser)
	if !ok {
		t.Skip("the store has no leases")
	}
	ctx := context.Background()
	h.create(t, "s1")
	h.enqueue(t, "s1", `{}`)
	c := h.claim(t, "w")
	_, err := leaser.Lease(ctx, "s1", false)
	require.ErrorIs(t, err, session.ErrLocked, "the claim holds the lease")
	require.NoError(t, h.Append(ctx, "s1", 0, Turn(t, 0, 1)), "the claiming handle appends")
	finish(t, c)

	rel, err := leaser.Lease(ctx, "s1", false)
	require.NoError(t, err, "finish released the lease")
	rel()
	log, err := other.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Len(t, log.Records, 17)

	// A job waits for a lease held outside the queue (vigil run on the
	// session), and is claimed once it is released.
	rel, err = leaser.Lease(ctx, "s1", false)
	require.NoError(t, err)
	j, _ := h.enqueue(t, "s1", `{}`)
	h.noClaim(t, "the session is leased by another")
	jobs := h.jobs(t, "s1")
	require.Len(t, jobs, 1)
	assert.Equal(t, session.JobQueued, jobs[0].State)
	rel()
	c = h.claim(t, "w")
	assert.Equal(t, j.ID, c.Job().ID)
	finish(t, c)
}

func testStartBase(t *testing.T, b *backing) {
	ctx := context.Background()
	h1, h2 := b.handle(t), b.handle(t)
	h1.create(t, "s1")
	j, _ := h1.enqueue(t, "s1", `{}`)

	c := h1.claim(t, "w1")
	assert.Equal(t, int64(-1), c.Job().Base, "never started")
	require.NoError(t, c.Start(ctx, 5))
	release(t, c)

	c = h2.claim(t, "w2")
	assert.Equal(t, j.ID, c.Job().ID)
	assert.Equal(t, int64(5), c.Job().Base, "the first start's base")
	assert.Equal(t, 2, c.Job().Attempts)
	require.NoError(t, c.Start(ctx, 9), "a later start is fine")
	release(t, c)

	c = h1.claim(t, "w1")
	assert.Equal(t, int64(5), c.Job().Base, "and changes nothing")
	assert.Equal(t, 3, c.Job().Attempts)
	jobs := h2.jobs(t, "s1")
	require.Len(t, jobs, 1)
	assert.Equal(t, int64(5), jobs[0].Base)
	assert.Equal(t, 3, jobs[0].Attempts)
	finish(t, c)
}

func testQueueRelease(t *testing.T, b *backing) {
	h1, h2 := b.handle(t), b.handle(t)
	h1.create(t, "s1")
	j, _ := h1.enqueue(t, "s1", `{}`)
	j2, _ := h1.enqueue(t, "s1", `{}`)
	c := h1.claim(t, "w1")
	release(t, c)
	jobs := h2.jobs(t, "s1")
	require.Equal(t, []string{j.ID, j2.ID}, ids(jobs))
	assert.Equal(t, session.JobQueued, jobs[0].State)
	assert.Equal(t, 1, jobs[0].Attempts)
	c = h2.claim(t, "w2")
	assert.Equal(t, j.ID, c.Job().ID, "the handed back job is first again")
	assert.Equal(t, "w2", c.Job().Worker)
	finish(t, c)
}

func testFinish(t *testing.T, b *backing) {
	h1, h2 := b.handle(t), b.handle(t)
	h1.create(t, "s1")
	h1.enqueue(t, "s1", `{}`)
	c := h1.claim(t, "w")
	finish(t, c)
	ctx := context.Background()
	assert.ErrorIs(t, c.Finish(ctx, session.Outcome{}), session.ErrJobDone, "a second end")
	assert.ErrorIs(t, c.Release(ctx), session.ErrJobDone)
	assert.ErrorIs(t, c.Start(ctx, 1), session.ErrJobDone)
	assert.Empty(t, h1.jobs(t, "s1"))
	assert.Empty(t, h2.jobs(t, "s1"))
	h2.noClaim(t, "a finished job is gone")
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitCancelled waits for c's Cancelled channel to be closed.
func waitCancelled(t *testing.T, c session.Claim) {
	t.Helper()
	select {
	case <-c.Cancelled():
	case <-time.After(claimTimeout):
		t.Fatal("the running claim, on another handle, was not signalled")
	}
}

func testCancel(t *testing.T, b *backing) {
	ctx := context.Background()
	worker, api := b.handle(t), b.handle(t)
	api.create(t, "s1", "s2", "s3")
	for range 3 {
		api.enqueue(t, "s1", `{}`)
	}
	other, _ := api.enqueue(t, "s2", `{}`)
	c := worker.claim(t, "w")
	require.Equal(t, "s1", c.Job().Session)
	assert.False(t, isClosed(c.Cancelled()), "not cancelled yet")

	n, err := api.Cancel(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, 3, n, "two dropped, one signalled")
	waitCancelled(t, c)
	jobs := api.jobs(t, "s1")
	require.Equal(t, []string{c.Job().ID}, ids(jobs), "the queued jobs are dropped, the running one stays until it ends")
	assert.Equal(t, []string{other.ID}, ids(api.jobs(t, "s2")), "another session's are kept")
	finish(t, c)
	assert.Empty(t, api.jobs(t, "s1"))

	n, err = api.Cancel(ctx, "s3")
	require.NoError(t, err)
	assert.Zero(t, n, "nothing to cancel")
	c = worker.claim(t, "w")
	assert.Equal(t, other.ID, c.Job().ID)
	assert.False(t, isClosed(c.Cancelled()))
	finish(t, c)
}

func testReleaseAfterCancel(t *testing.T, b *backing) {
	ctx := context.Background()
	worker, api := b.handle(t), b.handle(t)
	api.create(t, "s1")
	api.enqueue(t, "s1", `{}`)
	c := worker.claim(t, "w")
	n, err := api.Cancel(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	waitCancelled(t, c)
	release(t, c)
	assert.Empty(t, api.jobs(t, "s1"), "a cancelled job handed back is dropped, not run again")
	api.noClaim(t, "nothing left")
}

func testCrash(t *testing.T, b *backing) {
	ctx := context.Background()
	dying, next := b.handle(t), b.handle(t)
	dying.create(t, "s1")
	j, _ := dying.enqueue(t, "s1", `{}`)
	j2, _ := dying.enqueue(t, "s1", `{}`)
	c := dying.claim(t, "w1")
	require.NoError(t, c.Start(ctx, 3))
	require.NoError(t, dying.Append(ctx, "s1", 0, Turn(t, 0, 1)[:5]))
	b.crash(t, dying)

	c = next.claim(t, "w2")
	assert.Equal(t, j.ID, c.Job().ID, "the crashed job, not the next one")
	assert.Equal(t, int64(3), c.Job().Base)
	assert.Equal(t, 2, c.Job().Attempts)
	assert.Equal(t, "w2", c.Job().Worker)
	if leaser, ok := b.handle(t).Store.(session.Leaser); ok {
		_, err := leaser.Lease(ctx, "s1", false)
		require.ErrorIs(t, err, session.ErrLocked, "the new claim holds the lease")
	}
	finish(t, c)
	c = next.claim(t, "w2")
	assert.Equal(t, j2.ID, c.Job().ID)
	assert.Equal(t, 1, c.Job().Attempts)
	finish(t, c)
}

func testDurable(t *testing.T, b *backing) {
	ctx := context.Background()
	h := b.handle(t)
	h.create(t, "s1", "s2")
	done, _ := h.enqueue(t, "s2", `{"done":true}`)
	j1, _ := h.enqueue(t, "s1", `{"n":1}`)
	j2, _ := h.enqueue(t, "s1", `{"n":2}`)
	c := h.claim(t, "w")
	require.Equal(t, done.ID, c.Job().ID)
	finish(t, c)
	c = h.claim(t, "w")
	require.Equal(t, j1.ID, c.Job().ID)
	require.NoError(t, c.Start(ctx, 7))
	release(t, c)
	if cl, ok := h.Store.(io.Closer); ok {
		require.NoError(t, cl.Close())
		h.crashed = true // closed already
	}

	again := b.handle(t)
	assert.Empty(t, again.jobs(t, "s2"), "a finished job stays finished")
	jobs := again.jobs(t, "s1")
	require.Equal(t, []string{j1.ID, j2.ID}, ids(jobs))
	assert.Equal(t, `{"n":1}`, string(jobs[0].Input))
	assert.Equal(t, int64(7), jobs[0].Base)
	assert.Equal(t, 1, jobs[0].Attempts)
	assert.Equal(t, session.JobQueued, jobs[0].State)
	assert.WithinDuration(t, j1.Enqueued, jobs[0].Enqueued, time.Millisecond)
	j3, pos := again.enqueue(t, "s1", `{}`)
	assert.Equal(t, 2, pos)
	assert.NotContains(t, []string{j1.ID, j2.ID, done.ID}, j3.ID, "ids are not reused")
	for _, want := range []string{j1.ID, j2.ID, j3.ID} {
		c := again.claim(t, "w")
		assert.Equal(t, want, c.Job().ID)
		finish(t, c)
	}
}

func testQueueConcurrency(t *testing.T, b *backing) {
	const handles, perHandle, sessions, jobsPer = 3, 2, 4, 5
	hs := make([]*handle, handles)
	for i := range hs {
		hs[i] = b.handle(t)
	}
	var sids []string
	for i := range sessions {
		sids = append(sids, fmt.Sprintf("s%d", i))
	}
	hs[0].create(t, sids...)
	for n := range jobsPer {
		for i, id := range sids {
			hs[i%handles].enqueue(t, id, strconv.Itoa(n))
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu      sync.Mutex
		ran     = map[string][]string{} // session -> inputs, in the order run
		running = map[string]int{}
		total   int
	)
	var wg sync.WaitGroup
	for _, h := range hs {
		for w := range perHandle {
			wg.Go(func() {
				for {
					c, err := h.Claim(ctx, fmt.Sprintf("w%d", w))
					if err != nil {
						if !errors.Is(err, context.Canceled) {
							assert.NoError(t, err)
						}
						return
					}
					j := c.Job()
					mu.Lock()
					running[j.Session]++
					assert.Equal(t, 1, running[j.Session], "two jobs of %s at once", j.Session)
					ran[j.Session] = append(ran[j.Session], string(j.Input))
					mu.Unlock()
					// The job "runs" while others claim.
					assert.NoError(t, c.Start(context.Background(), 0))
					mu.Lock()
					running[j.Session]--
					total++
					all := total == sessions*jobsPer
					mu.Unlock()
					assert.NoError(t, c.Finish(context.Background(), session.Outcome{}))
					if all {
						cancel()
					}
				}
			})
		}
	}
	wg.Wait()
	require.NotErrorIs(t, ctx.Err(), context.DeadlineExceeded, "the workers did not run every job")
	want := make([]string, jobsPer)
	for n := range want {
		want[n] = strconv.Itoa(n)
	}
	for _, id := range sids {
		assert.Equal(t, want, ran[id], "session %s: every job once, in order", id)
		assert.Empty(t, hs[0].jobs(t, id))
	}
}

// job reads job id through h.
func (h *handle) job(t *testing.T, id string) session.Job {
	t.Helper()
	j, err := h.Job(context.Background(), id)
	require.NoError(t, err)
	return j
}

func testJobOutcome(t *testing.T, b *backing) {
	ctx := context.Background()
	h, other := b.handle(t), b.handle(t)
	h.create(t, "s1")
	_, err := h.Job(ctx, "0000000000000999")
	require.ErrorIs(t, err, session.ErrNotFound)
	_, err = h.Job(ctx, "not a job")
	require.ErrorIs(t, err, session.ErrNotFound)

	ok, _ := h.enqueue(t, "s1", `{"n":1}`)
	bad, _ := h.enqueue(t, "s1", `{"n":2}`)
	j := other.job(t, ok.ID)
	assert.Equal(t, session.JobQueued, j.State)
	assert.Equal(t, "s1", j.Session)
	assert.Equal(t, `{"n":1}`, string(j.Input))
	assert.True(t, j.Started.IsZero())
	assert.True(t, j.Finished.IsZero())

	before := time.Now().Add(-time.Minute)
	c := h.claim(t, "w1")
	assert.Equal(t, session.JobRunning, other.job(t, ok.ID).State, "seen by every handle")
	require.NoError(t, c.Start(ctx, 0))
	assert.True(t, other.job(t, ok.ID).Started.After(before))
	require.NoError(t, c.Finish(ctx, session.Outcome{Reason: "completed"}))
	c = h.claim(t, "w2")
	require.NoError(t, c.Start(ctx, 4))
	fail := session.Outcome{Error: &session.JobError{Code: "error", Message: "the model went away"}, Reason: "error"}
	require.NoError(t, c.Finish(ctx, fail))

	for _, q := range []*handle{h, other} {
		j = q.job(t, ok.ID)
		assert.Equal(t, session.JobDone, j.State)
		assert.Equal(t, session.Outcome{State: session.JobDone, Reason: "completed"}, j.Outcome)
		assert.Equal(t, "w1", j.Worker)
		assert.Equal(t, 1, j.Attempts)
		assert.True(t, j.Finished.After(before) && !j.Finished.Before(j.Started), "started %v, finished %v", j.Started, j.Finished)
		j = q.job(t, bad.ID)
		assert.Equal(t, session.JobFailed, j.State)
		assert.Equal(t, session.JobFailed, j.Outcome.State)
		assert.Equal(t, fail.Error, j.Outcome.Error)
		assert.Equal(t, "error", j.Outcome.Reason)
		assert.Equal(t, int64(4), j.Base)
		assert.Equal(t, `{"n":2}`, string(j.Input))
	}
	assert.Empty(t, h.jobs(t, "s1"), "finished jobs are not among the unfinished")

	if cl, ok := h.Store.(io.Closer); ok {
		require.NoError(t, cl.Close())
		h.crashed = true
	}
	again := b.handle(t)
	assert.Equal(t, session.JobFailed, again.job(t, bad.ID).State, "the outcome is durable")
	assert.Equal(t, fail.Error, again.job(t, bad.ID).Outcome.Error)
}

func testJobCancelled(t *testing.T, b *backing) {
	ctx := context.Background()
	worker, api := b.handle(t), b.handle(t)
	api.create(t, "s1")
	running, _ := api.enqueue(t, "s1", `{}`)
	queued, _ := api.enqueue(t, "s1", `{}`)
	c := worker.claim(t, "w")
	_, err := api.Cancel(ctx, "s1")
	require.NoError(t, err)
	j := api.job(t, queued.ID)
	assert.Equal(t, session.JobCancelled, j.State, "dropped before it ran")
	assert.False(t, j.Finished.IsZero())
	assert.Equal(t, session.JobRunning, api.job(t, running.ID).State, "signalled, still running")
	waitCancelled(t, c)
	require.NoError(t, c.Finish(ctx, session.Outcome{State: session.JobCancelled, Reason: "aborted"}))
	j = api.job(t, running.ID)
	assert.Equal(t, session.JobCancelled, j.State)
	assert.Equal(t, "aborted", j.Outcome.Reason)

	// A cancelled job handed back is dropped: cancelled too.
	third, _ := api.enqueue(t, "s1", `{}`)
	c = worker.claim(t, "w")
	require.Equal(t, third.ID, c.Job().ID)
	_, err = api.Cancel(ctx, "s1")
	require.NoError(t, err)
	waitCancelled(t, c)
	release(t, c)
	assert.Equal(t, session.JobCancelled, api.job(t, third.ID).State)
}

func testFinishState(t *testing.T, b *backing) {
	ctx := context.Background()
	h := b.handle(t)
	h.create(t, "s1")
	j, _ := h.enqueue(t, "s1", `{}`)
	c := h.claim(t, "w")
	require.Error(t, c.Finish(ctx, session.Outcome{State: session.JobRunning}))
	assert.Equal(t, session.JobRunning, h.job(t, j.ID).State, "a refused finish ends nothing")
	finish(t, c)
	assert.Equal(t, session.JobDone, h.job(t, j.ID).State)
}

// enqueueCall enqueues a decision job on call of session id.
func (h *handle) enqueueCall(id, call string) (session.Job, error) {
	j, _, err := h.Enqueue(context.Background(), session.Job{Session: id, Kind: "decide", Call: call, Input: []byte(`{}`)})
	return j, err
}

func testOneJobPerCall(t *testing.T, b *backing) {
	ctx := context.Background()
	h, other := b.handle(t), b.handle(t)
	h.create(t, "s1", "s2")
	first, err := h.enqueueCall("s1", "c1")
	require.NoError(t, err)
	assert.Equal(t, "c1", first.Call)
	assert.Equal(t, "c1", other.job(t, first.ID).Call)
	_, err = other.enqueueCall("s1", "c1")
	require.ErrorIs(t, err, session.ErrDuplicateJob, "queued")
	_, err = other.enqueueCall("s2", "c1")
	require.NoError(t, err, "another session's call")
	_, err = other.enqueueCall("s1", "c2")
	require.NoError(t, err, "another call")
	h.enqueue(t, "s1", `{}`) // jobs without a call are never refused

	c := h.claim(t, "w")
	require.Equal(t, first.ID, c.Job().ID)
	_, err = other.enqueueCall("s1", "c1")
	require.ErrorIs(t, err, session.ErrDuplicateJob, "running")
	require.NoError(t, c.Finish(ctx, session.Outcome{Error: &session.JobError{Code: "x", Message: "failed"}}))
	retry, err := other.enqueueCall("s1", "c1")
	require.NoError(t, err, "a failed job decided nothing: another may be queued")
	_, err = h.Cancel(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, session.JobCancelled, h.job(t, retry.ID).State)
	again, err := other.enqueueCall("s1", "c1")
	require.NoError(t, err, "a cancelled job decided nothing")
	c = h.claim(t, "w")
	if c.Job().ID != again.ID { // s2's job, claimed first
		finish(t, c)
		c = h.claim(t, "w")
	}
	require.Equal(t, again.ID, c.Job().ID)
	finish(t, c)
	_, err = other.enqueueCall("s1", "c1")
	require.ErrorIs(t, err, session.ErrDuplicateJob, "done: the call was decided")
}

func testOneJobPerCallConcurrent(t *testing.T, b *backing) {
	const handles, each = 3, 4
	hs := make([]*handle, handles)
	for i := range hs {
		hs[i] = b.handle(t)
	}
	hs[0].create(t, "s1")
	var mu sync.Mutex
	var queued, refused int
	var wg sync.WaitGroup
	for _, h := range hs {
		for range each {
			wg.Go(func() {
				_, err := h.enqueueCall("s1", "c1")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					queued++
				case errors.Is(err, session.ErrDuplicateJob):
					refused++
				default:
					assert.NoError(t, err)
				}
			})
		}
	}
	wg.Wait()
	assert.Equal(t, 1, queued)
	assert.Equal(t, handles*each-1, refused)
	assert.Len(t, hs[0].jobs(t, "s1"), 1)
}
