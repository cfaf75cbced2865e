package sessiontest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// RunDelete runs the conformance suite of [session.Deleter], on a store
// that is also a [session.Queue] and a [session.Follower], with the
// handles of h (several processes sharing the store).
func RunDelete(t *testing.T, h QueueHarness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, b *backing)
	}{
		{"DeleteRemovesTheLogAndEveryJob", testDeleteRemoves},
		{"AForkOutlivesItsDeletedParent", testDeleteForkLives},
		{"DeleteCancelsTheRunningClaimOfAnotherHandle", testDeleteRunningOther},
		{"DeleteStopsTheWriterOfItsOwnHandle", testDeleteRunningOwn},
		{"DeleteEndsFollowers", testDeleteFollowers},
		{"ConcurrentDeletesDeleteOnce", testDeleteConcurrent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &backing{h: h, open: h.New(t)}
			c.fn(t, b)
		})
	}
}

func deleter(t *testing.T, h *handle) session.Deleter {
	t.Helper()
	d, ok := h.Store.(session.Deleter)
	require.True(t, ok, "%T is not a session.Deleter", h.Store)
	return d
}

// appendTurn appends a whole turn to id through h, at next.
func appendTurn(t *testing.T, h *handle, id string, next int64, turn int) []session.Record {
	t.Helper()
	recs := Turn(t, next, turn)
	require.NoError(t, h.Append(context.Background(), id, next, recs))
	if r, ok := h.Store.(session.Releaser); ok {
		require.NoError(t, r.Release(id))
	}
	return recs
}

// requireGone checks session id is unknown to h in every way a reader
// meets it.
func requireGone(t *testing.T, h *handle, id string, jobs ...string) {
	t.Helper()
	ctx := context.Background()
	_, err := h.Load(ctx, id)
	require.ErrorIs(t, err, session.ErrNotFound, "load")
	_, err = session.ReadInfo(ctx, h.Store, id)
	require.ErrorIs(t, err, session.ErrNotFound, "info")
	_, err = session.LoadTail(ctx, h.Store, id)
	require.ErrorIs(t, err, session.ErrNotFound, "tail")
	_, _, err = h.Enqueue(ctx, session.Job{Session: id, Kind: "turn", Input: []byte(`{}`)})
	require.ErrorIs(t, err, session.ErrNotFound, "enqueue")
	_, err = h.Cancel(ctx, id)
	require.ErrorIs(t, err, session.ErrNotFound, "cancel")
	for _, j := range jobs {
		_, err := h.Job(ctx, j)
		require.ErrorIs(t, err, session.ErrNotFound, "job %s", j)
	}
	infos, err := h.List(ctx)
	require.NoError(t, err)
	for _, i := range infos {
		require.NotEqual(t, id, i.ID, "listed")
	}
	require.ErrorIs(t, deleter(t, h).Delete(ctx, id), session.ErrNotFound, "a second delete")
}

func testDeleteRemoves(t *testing.T, b *backing) {
	ctx := context.Background()
	worker, api := b.handle(t), b.handle(t)
	api.create(t, "s1", "s2")
	appendTurn(t, api, "s1", 0, 1)
	kept := appendTurn(t, api, "s2", 0, 1)
	done, _ := api.enqueue(t, "s1", `{"n":1}`)
	c := worker.claim(t, "w")
	require.Equal(t, done.ID, c.Job().ID)
	finish(t, c)
	queued, _ := api.enqueue(t, "s1", `{"n":2}`)
	other, _ := api.enqueue(t, "s2", `{}`)
	ledger, keeps := api.Store.(session.Ledger)
	if keeps {
		_, err := ledger.Record(ctx, "s1", session.IdempotencyKey("s1", "c1"), []byte("paid"))
		require.NoError(t, err)
	}

	require.NoError(t, deleter(t, api).Delete(ctx, "s1"))
	requireGone(t, api, "s1", done.ID, queued.ID)
	requireGone(t, worker, "s1", done.ID, queued.ID)

	log, err := worker.Load(ctx, "s2")
	require.NoError(t, err, "another session is kept")
	requireSameRecords(t, kept, log.Records)
	assert.Equal(t, []string{other.ID}, ids(worker.jobs(t, "s2")))
	c = worker.claim(t, "w")
	assert.Equal(t, other.ID, c.Job().ID, "the deleted session's job is never claimed")
	finish(t, c)

	// The id is free again, with nothing of the deleted session.
	api.create(t, "s1")
	log, err = worker.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Empty(t, log.Records)
	assert.Empty(t, worker.jobs(t, "s1"))
	_, err = worker.Job(ctx, done.ID)
	require.ErrorIs(t, err, session.ErrNotFound, "the old session's finished job does not come back")
	if keeps {
		_, ok, err := ledger.Lookup(ctx, "s1", session.IdempotencyKey("s1", "c1"))
		require.NoError(t, err)
		assert.False(t, ok, "the old session's ledger entry does not come back")
	}
}

func testDeleteForkLives(t *testing.T, b *backing) {
	ctx := context.Background()
	api, other := b.handle(t), b.handle(t)
	api.create(t, "p")
	first := appendTurn(t, api, "p", 0, 1)
	appendTurn(t, api, "p", int64(len(first)), 2)
	at := int64(len(first)) - 1
	fork := session.Info{ID: "f", Version: session.Version, Created: epoch, Parent: &session.Parent{ID: "p", Seq: at}}
	require.NoError(t, api.Fork(ctx, fork, nil))
	if r, ok := api.Store.(session.Releaser); ok {
		require.NoError(t, r.Release("f"))
	}

	require.NoError(t, deleter(t, other).Delete(ctx, "p"))
	requireGone(t, api, "p")
	log, err := api.Load(ctx, "f")
	require.NoError(t, err, "the fork holds its inherited records")
	requireSameRecords(t, first, log.Records)
	require.NotNil(t, log.Info.Parent)
	assert.Equal(t, "p", log.Info.Parent.ID, "its header still names its parent")
	next := appendTurn(t, other, "f", int64(len(first)), 2)
	log, err = api.Load(ctx, "f")
	require.NoError(t, err)
	requireSameRecords(t, append(first, next...), log.Records)
}

// claimed creates s1 with a job, and claims it through worker.
func claimed(t *testing.T, worker, api *handle) session.Claim {
	t.Helper()
	api.create(t, "s1")
	api.enqueue(t, "s1", `{}`)
	c := worker.claim(t, "w")
	require.Equal(t, "s1", c.Job().Session)
	require.NoError(t, c.Start(context.Background(), 0))
	return c
}

func testDeleteRunningOther(t *testing.T, b *backing) {
	ctx := context.Background()
	worker, api := b.handle(t), b.handle(t)
	c := claimed(t, worker, api)
	job := c.Job().ID
	require.NoError(t, deleter(t, api).Delete(ctx, "s1"), "a session is deleted while another holds its lease")
	waitCancelled(t, c)
	// The worker's writes go nowhere: refused, or (a file unlinked under
	// its lock) never read again.
	_ = worker.Append(ctx, "s1", 0, Turn(t, 0, 1))
	require.ErrorIs(t, c.Finish(ctx, session.Outcome{}), session.ErrJobDone)
	requireGone(t, api, "s1", job)
	requireGone(t, worker, "s1", job)

	// The lease went with the claim: a new session under the id is
	// written by anyone.
	api.create(t, "s1")
	appendTurn(t, worker, "s1", 0, 1)
}

func testDeleteRunningOwn(t *testing.T, b *backing) {
	ctx := context.Background()
	h := b.handle(t)
	c := claimed(t, h, h)
	require.NoError(t, h.Append(ctx, "s1", 0, Turn(t, 0, 1)[:2]))
	require.NoError(t, deleter(t, h).Delete(ctx, "s1"))
	waitCancelled(t, c)
	require.ErrorIs(t, h.Append(ctx, "s1", 2, Turn(t, 0, 1)[2:4]), session.ErrNotFound, "the writer stops")
	require.ErrorIs(t, c.Finish(ctx, session.Outcome{}), session.ErrJobDone)
	requireGone(t, h, "s1", c.Job().ID)
	h.create(t, "s1")
	appendTurn(t, h, "s1", 0, 1)
}

func testDeleteFollowers(t *testing.T, b *backing) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api, reader := b.handle(t), b.handle(t)
	api.create(t, "s1")
	recs := appendTurn(t, api, "s1", 0, 1)
	near := follow(ctx, api.Store, "s1", 0)
	far := follow(ctx, reader.Store, "s1", 0)
	near.expect(t, recs)
	far.expect(t, recs)
	require.NoError(t, deleter(t, api).Delete(ctx, "s1"))
	for _, f := range []*followed{near, far} {
		select {
		case err := <-f.err:
			require.ErrorIs(t, err, session.ErrNotFound)
		case <-time.After(followWait):
			t.Fatal("a follower of the deleted session goes on")
		}
	}
}

func testDeleteConcurrent(t *testing.T, b *backing) {
	ctx := context.Background()
	hs := []*handle{b.handle(t), b.handle(t), b.handle(t)}
	hs[0].create(t, "s1")
	errs := make(chan error, len(hs))
	for _, h := range hs {
		go func() { errs <- deleter(t, h).Delete(ctx, "s1") }()
	}
	ok := 0
	for range hs {
		err := <-errs
		if err == nil {
			ok++
			continue
		}
		require.ErrorIs(t, err, session.ErrNotFound)
	}
	assert.GreaterOrEqual(t, ok, 1)
	requireGone(t, hs[1], "s1")
}
