package live_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// batcher is a memory store that takes appends in batches (as
// PostgreSQL's does) and records each append's length; fail makes the
// next append fail.
type batcher struct {
	*memory.Store
	mu      sync.Mutex
	appends []int
	fail    error
}

func (b *batcher) AppendsInBatches() bool { return true }

func (b *batcher) Append(ctx context.Context, id string, next int64, recs []session.Record) error {
	b.mu.Lock()
	fail := b.fail
	b.fail = nil
	b.mu.Unlock()
	if fail != nil {
		return fail
	}
	if err := b.Store.Append(ctx, id, next, recs); err != nil {
		return err
	}
	b.mu.Lock()
	b.appends = append(b.appends, len(recs))
	b.mu.Unlock()
	return nil
}

func (b *batcher) taken() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.appends
	b.appends = nil
	return out
}

// leasedOnBatcher is a new session, leased, on a batcher.
func leasedOnBatcher(t *testing.T) (*batcher, *harness, *live.Session, func(context.Context) error) {
	store := &batcher{Store: memory.New()}
	h := newHarnessWith(t, store)
	sess, done, err := live.OpenLeased(h.ctx, h.m, "", false)
	require.NoError(t, err)
	return store, h, sess, done
}

func stored(t *testing.T, s session.Store, id string) int {
	log, err := s.Load(context.Background(), id)
	require.NoError(t, err)
	return len(log.Records)
}

// Under its lease a session hands a Batcher the records between two
// durability points as one append: a flush writes them, and nothing is
// stored before.
func TestALeasedSessionAppendsInBatches(t *testing.T) {
	live.SetBatchDelays(t, time.Hour, time.Hour)
	store, h, sess, done := leasedOnBatcher(t)
	store.taken()
	turns := sessiontest.TextTurns(14) // two turns of 7, without requests
	evs := turns[:7]
	h.appendAll(sess, evs...)
	assert.Empty(t, store.taken(), "nothing written before a durability point")
	assert.Zero(t, stored(t, store, sess.ID()))
	require.NoError(t, sess.Flush(h.ctx))
	assert.Equal(t, []int{len(evs)}, store.taken(), "one append at the flush")
	assert.Equal(t, len(evs), stored(t, store, sess.ID()))

	h.appendAll(sess, turns[7:]...)
	require.NoError(t, done(h.ctx))
	assert.Equal(t, []int{len(evs)}, store.taken(), "the turn's end is written as the session is parked")
	assert.Equal(t, 2*len(evs), stored(t, store, sess.ID()))

	// Outside the lease, one record at a time again.
	h.appendAll(sess, sessiontest.User("after"))
	assert.Equal(t, []int{1}, store.taken())
}

// The records that precede an effect are written at once, with what was
// batched before them: a turn's first request (the model is called) and
// a tool/start (the tool runs).
func TestWhatPrecedesAnEffectIsWrittenAtOnce(t *testing.T) {
	live.SetBatchDelays(t, time.Hour, time.Hour)
	store, h, sess, done := leasedOnBatcher(t)
	defer func() { require.NoError(t, done(h.ctx)) }()
	store.taken()
	evs := sessiontest.TurnEvents(t, 0, 1)
	var request, start int
	for i, ev := range evs {
		switch ev.Type {
		case session.TypeRequestDigest:
			request = i
		case session.TypeToolStart:
			start = i
		}
	}
	require.Positive(t, request)
	require.Greater(t, start, request)
	h.appendAll(sess, evs[:start+1]...)
	assert.Equal(t, []int{request + 1, start - request}, store.taken())
}

// A step's end is written within the short delay, without a flush.
func TestABatchIsWrittenByTheTimer(t *testing.T) {
	live.SetBatchDelays(t, time.Hour, time.Millisecond)
	store, h, sess, done := leasedOnBatcher(t)
	defer func() { require.NoError(t, done(h.ctx)) }()
	store.taken()
	evs := sessiontest.TurnEvents(t, 0, 1)
	h.appendAll(sess, evs...)
	require.Eventually(t, func() bool { return stored(t, store, sess.ID()) == len(evs) }, 10*time.Second, time.Millisecond)
}

// A batch the store refuses breaks the session: what was batched is not
// reported durable, and no later append or flush pretends otherwise.
func TestAFailedBatchBreaksTheSession(t *testing.T) {
	live.SetBatchDelays(t, time.Hour, time.Hour)
	store, h, sess, done := leasedOnBatcher(t)
	h.appendAll(sess, sessiontest.User("one"))
	boom := errors.New("boom")
	store.mu.Lock()
	store.fail = boom
	store.mu.Unlock()
	require.ErrorIs(t, sess.Flush(h.ctx), boom)
	_, err := sess.Append(h.ctx, sessiontest.User("two"))
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, sess.Flush(h.ctx), boom, "still")
	require.ErrorIs(t, done(h.ctx), boom)
	assert.Zero(t, stored(t, store, sess.ID()))
}

// stager is a batcher that stages (see session.Stager): it records
// which appends were staged and which flushes made them durable.
type stager struct {
	*batcher
	staged, flushes int
}

func (s *stager) AppendStaged(ctx context.Context, id string, next int64, recs []session.Record) error {
	if err := s.batcher.Append(ctx, id, next, recs); err != nil {
		return err
	}
	s.mu.Lock()
	s.staged++
	s.mu.Unlock()
	return nil
}

func (s *stager) Flush(ctx context.Context, id string) error {
	s.mu.Lock()
	s.flushes++
	s.mu.Unlock()
	return nil
}

// On a Stager a turn's first request is staged, not written durably: the
// next durable write (the tool/start) makes it durable with it; a flush
// with nothing batched after a staged write flushes the store, and one
// after a durable write does not.
func TestATurnsFirstRequestIsStaged(t *testing.T) {
	live.SetBatchDelays(t, time.Hour, time.Hour)
	store := &stager{batcher: &batcher{Store: memory.New()}}
	h := newHarnessWith(t, store)
	sess, done, err := live.OpenLeased(h.ctx, h.m, "", false)
	require.NoError(t, err)
	defer func() { require.NoError(t, done(h.ctx)) }()
	evs := sessiontest.TurnEvents(t, 0, 1)
	var request, start int
	for i, ev := range evs {
		switch ev.Type {
		case session.TypeRequestDigest:
			request = i
		case session.TypeToolStart:
			start = i
		}
	}
	h.appendAll(sess, evs[:request+1]...)
	assert.Equal(t, []int{request + 1}, store.taken())
	assert.Equal(t, 1, store.staged)
	require.NoError(t, sess.Flush(h.ctx))
	assert.Equal(t, 1, store.flushes, "the flush made the staged records durable")
	require.NoError(t, sess.Flush(h.ctx))
	assert.Equal(t, 1, store.flushes, "nothing staged since")

	h.appendAll(sess, evs[request+1:start+1]...)
	assert.Equal(t, []int{start - request}, store.taken(), "the tool/start is written at once")
	assert.Equal(t, 1, store.staged, "and durably")
	require.NoError(t, sess.Flush(h.ctx))
	assert.Equal(t, 1, store.flushes, "which made the store durable")
}

// A step's end followed at once by more records (a model that answers at
// once) is not written after the short delay: it waits for what follows,
// batchDelay at most, to share its write.
func TestAStepEndFollowedAtOnceWaits(t *testing.T) {
	live.SetBatchDelays(t, time.Hour, time.Second)
	store, h, sess, done := leasedOnBatcher(t)
	defer func() { require.NoError(t, done(h.ctx)) }()
	evs := sessiontest.TurnEvents(t, 0, 2)
	end := -1
	for i, ev := range evs {
		if ev.Type == session.TypeStepEnd {
			end = i
			break
		}
	}
	require.Positive(t, end)
	require.Less(t, end+1, len(evs))
	var start int
	for i, ev := range evs[:end] {
		if ev.Type == session.TypeToolStart {
			start = i
		}
	}
	h.appendAll(sess, evs[:end+2]...) // through the step's end and the next record
	store.taken()
	time.Sleep(1500 * time.Millisecond)
	assert.Empty(t, store.taken(), "past the short delay, the step's end still waits")
	assert.Equal(t, start+1, stored(t, store, sess.ID()))
}
