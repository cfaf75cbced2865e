package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// affinityStores opens an API store and two worker stores, A and B, on
// one schema, with sessions "s" and "u"; A ran a job of "s", so "s" is
// A's.
func affinityStores(t *testing.T) (api, a, b *pgstore.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema := pgtest.Schema(t)
	api = pgtest.StoreIn(t, schema, pgstore.WithHolder("API"))
	a = pgtest.StoreIn(t, schema, pgstore.WithHolder("A"))
	b = pgtest.StoreIn(t, schema, pgstore.WithHolder("B"))
	for _, s := range []*pgstore.Store{a, b} {
		require.NoError(t, pgstore.Listen(ctx, s))
	}
	for _, id := range []string{"s", "u"} {
		require.NoError(t, api.Create(ctx, session.Info{ID: id, Created: epoch}))
	}
	enqueue(t, api, "s")
	c := claimOf(t, a, "a")
	require.Equal(t, "s", c.Job().Session)
	require.NoError(t, c.Finish(ctx, session.Outcome{}))
	return api, a, b
}

func enqueue(t *testing.T, api *pgstore.Store, id string) session.Job {
	t.Helper()
	j, _, err := api.Enqueue(context.Background(), session.Job{Session: id, Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
	return j
}

// workerStore opens an API store and a worker store, W, listening, on
// one schema.
func workerStore(t *testing.T, ctx context.Context) (schema string, api, w *pgstore.Store) {
	t.Helper()
	schema = pgtest.Schema(t)
	api = pgtest.StoreIn(t, schema, pgstore.WithHolder("API"))
	w = pgtest.StoreIn(t, schema, pgstore.WithHolder("W"))
	require.NoError(t, pgstore.Listen(ctx, w))
	return schema, api, w
}

// claimAsync starts a waiting claim; its result comes on the channel.
func claimAsync(ctx context.Context, s *pgstore.Store, worker string) <-chan session.Claim {
	out := make(chan session.Claim, 1)
	go func() {
		c, err := s.Claim(ctx, worker)
		if err != nil {
			c = nil
		}
		out <- c
	}()
	return out
}

// A session's next job goes to the store that held it last, which keeps
// it open, parked: woken at once by the enqueue's notification (the
// queue's safety poll is an hour here), while another store's waiting
// claim is not, and takes a job of a session nobody held instead, though
// younger.
func TestTheLastHolderClaimsItsSessionsNextJob(t *testing.T) {
	pgstore.SetQueuePoll(t, time.Hour)
	pgstore.SetAffinityGrace(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	api, a, b := affinityStores(t)

	fromB := claimAsync(ctx, b, "b")
	fromA := claimAsync(ctx, a, "a")
	js := enqueue(t, api, "s")
	ca := <-fromA
	require.NotNil(t, ca)
	require.Equal(t, js.ID, ca.Job().ID)
	select {
	case cb := <-fromB:
		t.Fatalf("B claimed %v, a job of A's session", cb.Job())
	case <-time.After(300 * time.Millisecond):
	}

	// A job of a session nobody held is anyone's: B, waiting, takes it.
	ju := enqueue(t, api, "u")
	cb := <-fromB
	require.NotNil(t, cb)
	require.Equal(t, ju.ID, cb.Job().ID)
	require.NoError(t, cb.Finish(ctx, session.Outcome{}))

	// A's turn ends with the session's next job queued: the release
	// names A, and A's waiting claim takes it, not B's.
	js2 := enqueue(t, api, "s")
	fromB = claimAsync(ctx, b, "b")
	fromA = claimAsync(ctx, a, "a2")
	time.Sleep(100 * time.Millisecond) // both waiting (or B, idle: the job is not B's to take)
	require.NoError(t, ca.Finish(ctx, session.Outcome{}))
	ca = <-fromA
	require.NotNil(t, ca)
	require.Equal(t, js2.ID, ca.Job().ID)
	require.NoError(t, ca.Finish(ctx, session.Outcome{}))
	select {
	case cb := <-fromB:
		t.Fatalf("B claimed %v", cb.Job())
	case <-time.After(100 * time.Millisecond):
	}
}

// A store that holds a session is busy or gone: once the grace is over,
// the job is anyone's, and another store's waiting claim is woken for it
// (the queue's safety poll is an hour here).
func TestAnotherStoreClaimsTheJobOnceTheGraceIsOver(t *testing.T) {
	const grace = 300 * time.Millisecond
	pgstore.SetQueuePoll(t, time.Hour)
	pgstore.SetAffinityGrace(t, grace)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	api, _, b := affinityStores(t)

	fromB := claimAsync(ctx, b, "b")
	start := time.Now()
	js := enqueue(t, api, "s")
	cb := <-fromB
	require.NotNil(t, cb)
	require.Equal(t, js.ID, cb.Job().ID)
	require.GreaterOrEqual(t, time.Since(start), grace, "claimed before the grace was over")
	require.NoError(t, cb.Finish(ctx, session.Outcome{}))

	// B held it last: the session is B's now.
	fromB = claimAsync(ctx, b, "b")
	js = enqueue(t, api, "s")
	cb = <-fromB
	require.NotNil(t, cb)
	require.Equal(t, js.ID, cb.Job().ID)
	require.NoError(t, cb.Finish(ctx, session.Outcome{}))
}

// The grace never starves a job: past it, the oldest job goes first,
// whoever's session it is.
func TestPastTheGraceTheOldestJobGoesFirst(t *testing.T) {
	const grace = 200 * time.Millisecond
	pgstore.SetAffinityGrace(t, grace)
	ctx := context.Background()
	api, _, b := affinityStores(t)
	require.NoError(t, api.Create(ctx, session.Info{ID: "v", Created: epoch}))
	enqueue(t, api, "v")
	c := claimOf(t, b, "b")
	require.NoError(t, c.Finish(ctx, session.Outcome{}))

	js := enqueue(t, api, "s") // A's
	time.Sleep(grace + 50*time.Millisecond)
	enqueue(t, api, "v") // B's own, younger
	c = claimOf(t, b, "b")
	require.Equal(t, js.ID, c.Job().ID, "the older job, A's, past its grace")
	require.NoError(t, c.Finish(ctx, session.Outcome{}))
}

// A session whose last lease was not a claim's (a store that created it,
// or ran a turn directly, may claim no jobs) is anyone's at once.
func TestASessionLeasedButNotClaimedIsAnyones(t *testing.T) {
	pgstore.SetQueuePoll(t, time.Hour)
	pgstore.SetAffinityGrace(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	api, _, b := affinityStores(t)
	release, err := api.Lease(ctx, "u", false)
	require.NoError(t, err)
	release()
	fromB := claimAsync(ctx, b, "b")
	ju := enqueue(t, api, "u")
	cb := <-fromB
	require.NotNil(t, cb)
	require.Equal(t, ju.ID, cb.Job().ID)
	require.NoError(t, cb.Finish(ctx, session.Outcome{}))
}

// Jobs that become anyone's at once (their grace over together) are all
// claimed by the waiting claims, not one per wake-up.
func TestJobsPastTheirGraceTogetherAreAllClaimed(t *testing.T) {
	const grace = 300 * time.Millisecond
	pgstore.SetQueuePoll(t, time.Hour)
	pgstore.SetAffinityGrace(t, grace)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema := pgtest.Schema(t)
	api := pgtest.StoreIn(t, schema, pgstore.WithHolder("API"))
	a := pgtest.StoreIn(t, schema, pgstore.WithHolder("A"))
	b := pgtest.StoreIn(t, schema, pgstore.WithHolder("B"))
	require.NoError(t, pgstore.Listen(ctx, b))
	ids := []string{"s1", "s2", "s3"}
	for _, id := range ids {
		require.NoError(t, api.Create(ctx, session.Info{ID: id, Created: epoch}))
		enqueue(t, api, id)
		c := claimOf(t, a, "a")
		require.NoError(t, c.Finish(ctx, session.Outcome{}))
	}
	var waiting []<-chan session.Claim
	for range ids {
		waiting = append(waiting, claimAsync(ctx, b, "b"))
	}
	time.Sleep(100 * time.Millisecond) // waiting
	for _, id := range ids {
		enqueue(t, api, id) // A's, and A claims nothing
	}
	got := map[string]bool{}
	for _, w := range waiting {
		select {
		case c := <-w:
			require.NotNil(t, c)
			got[c.Job().Session] = true
			require.NoError(t, c.Finish(ctx, session.Outcome{}))
		case <-time.After(10 * time.Second):
			t.Fatalf("claimed only %v", got)
		}
	}
	require.Len(t, got, len(ids))
}

// A worker claims again as each of its jobs ends. When nothing was
// notified to its store since one of its claims found no job, the claim
// does not look: it waits for news (here, a job enqueued without a
// notification stays unseen; the queue's safety poll is an hour). A job
// notified while no claim of the store was waiting is news all the same:
// the next claim looks, and finds both.
func TestAClaimLooksOnlyWhenSomethingMayHaveChanged(t *testing.T) {
	pgstore.SetQueuePoll(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema, api, w := workerStore(t, ctx)
	for _, id := range []string{"silent", "told"} {
		require.NoError(t, api.Create(ctx, session.Info{ID: id, Created: epoch}))
	}
	claimWithin := func(d time.Duration) session.Claim {
		cctx, ccancel := context.WithTimeout(ctx, d)
		defer ccancel()
		c, err := w.Claim(cctx, "w")
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			return nil
		}
		return c
	}
	// Long enough for its look to end whatever the machine's load: the
	// look that found nothing is what the next claim goes by.
	require.Nil(t, claimWithin(2*time.Second), "an empty queue")

	admin, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer admin.Close(context.Background())
	_, err = admin.Exec(ctx, fmt.Sprintf(`INSERT INTO %s.vigil_jobs (session_id, kind, input, enqueued) VALUES ('silent', 'turn', '{}', clock_timestamp())`,
		pgx.Identifier{schema}.Sanitize()))
	require.NoError(t, err)
	require.Nil(t, claimWithin(300*time.Millisecond), "no news: no look")

	told := enqueue(t, api, "told")
	// No claim of w waits as the notification comes; the next one looks.
	time.Sleep(200 * time.Millisecond)
	first := claimWithin(10 * time.Second)
	require.NotNil(t, first)
	assert.Equal(t, "silent", first.Job().Session, "the oldest job first")
	second := claimWithin(10 * time.Second)
	require.NotNil(t, second, "the claim that saw more jobs than it took is news")
	assert.Equal(t, told.ID, second.Job().ID)
	for _, c := range []session.Claim{first, second} {
		require.NoError(t, c.Finish(ctx, session.Outcome{}))
	}
}

// A job of a session whose last lease was not a claim's (the API
// process created it under a lease) is notified for the holder of the
// job that finished last, as one of a session nobody held, and never for
// that lease's holder: a name no worker process has would make every
// process look at once, all but one for nothing.
func TestAJobOfASessionLeasedButNotClaimedIsNotifiedForWhoFinishedLast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	api, _, _ := affinityStores(t) // A finished a job just now
	release, err := api.Lease(ctx, "u", false)
	require.NoError(t, err)
	release()
	jobs := listenTo(t, ctx, pgstore.JobsChannel(api))
	enqueue(t, api, "u")
	got := jobs.drain(1, 300*time.Millisecond)
	require.Len(t, got, 1)
	// Nobody is named ('0') only when the machine took longer than
	// finishedLately from A's finish to the enqueue.
	assert.Regexp(t, `^q (A#c[0-9]+|0) u$`, got[0])
}

// Claims of a store woken by one piece of news look once: a claim that
// comes while another looks at the same news leaves it to that look
// (whose statement sees all this one would), where it would find the
// job locked by that look and nothing else.
func TestClaimsOfAStoreLookOnceForOneNews(t *testing.T) {
	pgstore.SetQueuePoll(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema, api, w := workerStore(t, ctx)
	require.NoError(t, api.Create(ctx, session.Info{ID: "s", Created: epoch}))

	// The first look's claim waits for the session's row, which the
	// admin holds: it looks until the admin lets go.
	admin, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer admin.Close(context.Background())
	tx, err := admin.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(ctx, fmt.Sprintf(`SELECT 1 FROM %s.vigil_sessions WHERE id = 's' FOR UPDATE`, pgx.Identifier{schema}.Sanitize()))
	require.NoError(t, err)
	notified, err := pgstore.Notified(w, "s")
	require.NoError(t, err)
	job := enqueue(t, api, "s")
	// The claim looks at the notification's news, not before it comes.
	require.NoError(t, notified(ctx))
	first := claimAsync(ctx, w, "w1")
	// Read on a connection of its own: a transaction's reads of the
	// statistics views are one snapshot.
	watcher, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer watcher.Close(context.Background())
	require.Eventually(t, func() bool {
		var waiting bool
		err := watcher.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%vigil_jobs%')`).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond, "the first claim waits for the session's row")
	looks, _ := pgstore.Looks(w)
	require.EqualValues(t, 1, looks)

	cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer ccancel()
	_, err = w.Claim(cctx, "w2")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	looks, _ = pgstore.Looks(w)
	assert.EqualValues(t, 1, looks, "the second claim left the look to the first")

	require.NoError(t, tx.Rollback(ctx))
	c := <-first
	require.NotNil(t, c)
	assert.Equal(t, job.ID, c.Job().ID)
	require.NoError(t, c.Finish(ctx, session.Outcome{}))
}

// A look that finds nothing reads when the soonest lease on a session
// with jobs expires (a dead worker's frees its jobs without a
// notification); the store's looks within expiryFresh of that read go by
// it, a statement less each.
func TestLooksThatFindNothingShareTheExpiryTheyRead(t *testing.T) {
	pgstore.SetQueuePoll(t, time.Hour)
	pgstore.SetExpiryFresh(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, api, w := workerStore(t, ctx)
	require.NoError(t, api.Create(ctx, session.Info{ID: "busy", Created: epoch}))
	release, err := api.Lease(ctx, "busy", false)
	require.NoError(t, err)
	defer release()

	claim := claimAsync(ctx, w, "w")
	looked := func(n uint64) func() bool {
		return func() bool { looks, _ := pgstore.Looks(w); return looks == n }
	}
	require.Eventually(t, looked(1), 10*time.Second, 5*time.Millisecond, "an empty queue")
	enqueue(t, api, "busy") // news, but its session is leased
	require.Eventually(t, looked(2), 10*time.Second, 5*time.Millisecond, "a job enqueued is news")
	assert.Never(t, func() bool { _, reads := pgstore.Looks(w); return reads != 1 }, 300*time.Millisecond, 10*time.Millisecond,
		"the second look went by the first one's read")
	cancel()
	assert.Nil(t, <-claim)
}
