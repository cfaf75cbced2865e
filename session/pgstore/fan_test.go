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

// backends are the database sessions of one application_name.
type backends struct {
	t     *testing.T
	admin *pgx.Conn
	app   string
}

func newBackends(t *testing.T, app string) *backends {
	admin, err := pgx.Connect(context.Background(), pgtest.DSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	return &backends{t: t, admin: admin, app: app}
}

// pids returns the app's backends, and which of them last ran LISTEN.
func (b *backends) pids() (all []int32, listening []int32) {
	rows, err := b.admin.Query(context.Background(),
		`SELECT pid, query LIKE 'LISTEN%' FROM pg_stat_activity WHERE application_name = $1`, b.app)
	require.NoError(b.t, err)
	defer rows.Close()
	for rows.Next() {
		var pid int32
		var ln bool
		require.NoError(b.t, rows.Scan(&pid, &ln))
		all = append(all, pid)
		if ln {
			listening = append(listening, pid)
		}
	}
	require.NoError(b.t, rows.Err())
	return all, listening
}

// idleAfter waits until one of the app's backends is idle after a
// statement starting with prefix: whoever ran it is waiting now.
func (b *backends) idleAfter(prefix string) {
	require.Eventually(b.t, func() bool {
		var n int
		require.NoError(b.t, b.admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND state = 'idle' AND query ILIKE $2`, b.app, prefix+"%").Scan(&n))
		return n > 0
	}, 20*time.Second, 10*time.Millisecond, "nobody idle after %q", prefix)
}

// cutListener terminates the app's LISTEN connection, and waits until it
// is gone.
func (b *backends) cutListener() {
	var cut int
	require.NoError(b.t, b.admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND query LIKE 'LISTEN%' AND pg_terminate_backend(pid, 10000)`, b.app).Scan(&cut))
	require.Equal(b.t, 1, cut, "the store's one LISTEN connection")
}

// A worker process runs many claims at once, waiting and running, besides
// lease waiters and followers: they all share the store's LISTEN
// connections, one per channel (jobs; appends), and a claim takes a
// pooled connection, never a new one.
func TestOneListenConnectionPerChannelServesClaimsWatchersLeasesAndFollowers(t *testing.T) {
	schema := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	app := "fan_" + schema
	api := pgtest.StoreIn(t, schema)
	w, err := pgstore.Open(ctx, withApp(pgtest.DSN(t), app), pgstore.WithSchema(schema), pgstore.WithMaxConns(2))
	require.NoError(t, err)
	defer w.Close()
	db := newBackends(t, app)
	seen, listened := map[int32]bool{}, map[int32]bool{}
	look := func() {
		all, ln := db.pids()
		for _, p := range all {
			seen[p] = true
		}
		for _, p := range ln {
			listened[p] = true
		}
	}
	const sessions = 3
	for i := range sessions + 1 {
		require.NoError(t, api.Create(ctx, session.Info{ID: fmt.Sprintf("s%d", i), Created: epoch}))
	}
	recs := turnRecords(nil, "q", "a", false)
	require.NoError(t, api.Append(ctx, "s3", 0, recs[:1]))
	followed := make(chan session.Record, len(recs))
	fctx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	go func() {
		for r, err := range w.Follow(fctx, "s3", 0) {
			if !assert.NoError(t, err) {
				return
			}
			followed <- r
		}
	}()
	require.Equal(t, int64(0), (<-followed).Seq())

	// Claims one after the other, each watched for a cancel, each
	// session's lease awaited by a Lease of the same store.
	for i := range 5 {
		sid := fmt.Sprintf("s%d", i%sessions)
		_, _, err := api.Enqueue(ctx, session.Job{Session: sid, Kind: "turn", Input: []byte(`{}`)})
		require.NoError(t, err)
		c := claimOf(t, w, "w")
		require.Equal(t, sid, c.Job().Session)
		leased := make(chan func(), 1)
		go func() {
			release, err := w.Lease(ctx, sid, true)
			assert.NoError(t, err)
			leased <- release
		}()
		if i == 0 {
			n, err := api.Cancel(ctx, sid)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			<-c.Cancelled()
		}
		look()
		require.NoError(t, c.Finish(ctx, session.Outcome{}))
		release := <-leased
		require.NotNil(t, release)
		release()
	}
	// Claims waiting at once, then given a job each.
	got := make(chan session.Claim, sessions)
	for range sessions {
		go func() {
			c, err := w.Claim(ctx, "w")
			assert.NoError(t, err)
			got <- c
		}()
	}
	require.NoError(t, api.Append(ctx, "s3", 1, recs[1:2]))
	assert.Equal(t, int64(1), (<-followed).Seq())
	for i := range sessions {
		_, _, err := api.Enqueue(ctx, session.Job{Session: fmt.Sprintf("s%d", i), Kind: "turn", Input: []byte(`{}`)})
		require.NoError(t, err)
	}
	var claims []session.Claim
	for range sessions {
		c := <-got
		require.NotNil(t, c)
		claims = append(claims, c)
	}
	look()
	for _, c := range claims {
		require.NoError(t, c.Finish(ctx, session.Outcome{}))
	}
	assert.Len(t, listened, 2, "one LISTEN connection per channel all along")
	assert.LessOrEqual(t, len(seen), 4, "the LISTEN connections and at most 2 pooled: %v", seen)
}

// The store's LISTEN connection drops (a restart, a failover, a proxy's
// timeout) while its subscribers wait, and what they wait for happens
// meanwhile without a notification reaching them: once the connection is
// back, each looks again and finds it. The queue's safety poll is an hour
// here, so only that wake-up can end the wait.
func TestSubscribersLookAgainWhenTheListenConnectionIsBack(t *testing.T) {
	cases := []struct {
		name string
		// wait starts a subscriber of w (api set up the session "s") and
		// returns what it waits for; idle is the statement it ran last
		// before it waits.
		wait func(t *testing.T, ctx context.Context, api, w *pgstore.Store) (done <-chan struct{})
		idle string
		// silently does in the database, without a notification, what
		// the subscriber waits for.
		silently string
	}{
		{
			name: "a waiting claim",
			wait: func(t *testing.T, ctx context.Context, api, w *pgstore.Store) <-chan struct{} {
				done := make(chan struct{})
				go func() {
					c, err := w.Claim(ctx, "w")
					if assert.NoError(t, err) {
						assert.NoError(t, c.Finish(context.Background(), session.Outcome{}))
					}
					close(done)
				}()
				return done
			},
			idle:     "SELECT extract(epoch FROM min(l.expires)",
			silently: `INSERT INTO %s.vigil_jobs (session_id, kind, input, enqueued) VALUES ('s', 'turn', '{}', clock_timestamp())`,
		},
		{
			name: "a running claim's cancel watcher",
			wait: func(t *testing.T, ctx context.Context, api, w *pgstore.Store) <-chan struct{} {
				_, _, err := api.Enqueue(ctx, session.Job{Session: "s", Kind: "turn", Input: []byte(`{}`)})
				require.NoError(t, err)
				c := claimOf(t, w, "w")
				t.Cleanup(func() { _ = c.Finish(context.Background(), session.Outcome{}) })
				return c.Cancelled()
			},
			// The watcher waits from the claim's return on, without a
			// first look: nothing was cancelled since the claim began.
			idle:     "/* vigil: asynchronous commit */ WITH c AS MATERIALIZED",
			silently: `UPDATE %s.vigil_jobs SET cancelled = true`,
		},
		{
			name: "a lease waiter",
			wait: func(t *testing.T, ctx context.Context, api, w *pgstore.Store) <-chan struct{} {
				release, err := api.Lease(ctx, "s", false)
				require.NoError(t, err)
				t.Cleanup(release)
				done := make(chan struct{})
				go func() {
					release, err := w.Lease(ctx, "s", true)
					if assert.NoError(t, err) {
						release()
					}
					close(done)
				}()
				return done
			},
			idle:     "SELECT l.holder",
			silently: `DELETE FROM %s.vigil_leases`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pgstore.SetQueuePoll(t, time.Hour)
			schema := pgtest.Schema(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			app := "fan_" + schema
			// The lease waiter sleeps until the lease expires at most:
			// longer than the test waits.
			api := pgtest.StoreIn(t, schema, pgstore.WithLeaseTTL(time.Hour))
			w, err := pgstore.Open(ctx, withApp(pgtest.DSN(t), app), pgstore.WithSchema(schema), pgstore.WithLeaseTTL(time.Hour))
			require.NoError(t, err)
			defer w.Close()
			require.NoError(t, api.Create(ctx, session.Info{ID: "s", Created: epoch}))
			db := newBackends(t, app)

			// Listening before the subscriber comes, so that the wake-up
			// of the first LISTEN does not count.
			require.NoError(t, pgstore.Listen(ctx, w))
			done := c.wait(t, ctx, api, w)
			db.idleAfter(c.idle)
			_, err = db.admin.Exec(ctx, fmt.Sprintf(c.silently, pgx.Identifier{schema}.Sanitize()))
			require.NoError(t, err)
			select {
			case <-done:
				t.Fatal("done before the connection dropped: the test proves nothing")
			default:
			}
			db.cutListener()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("still waiting after the LISTEN connection was back")
			}
		})
	}
}

// Every append is one synchronous commit that notifies once, at the
// commit: nothing is notified (nor sent in a transaction of its own)
// after it, so followers are woken by the commits a turn makes anyway.
func TestAnAppendIsOneCommitAndOneNotification(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := pgtest.Store(t)
	require.NoError(t, s.Create(ctx, session.Info{ID: "s", Created: epoch}))
	ln, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer ln.Close(context.Background())
	_, err = ln.Exec(ctx, "LISTEN "+pgx.Identifier{pgstore.Channel(s)}.Sanitize())
	require.NoError(t, err)
	next := func(wait time.Duration) string {
		wctx, wcancel := context.WithTimeout(ctx, wait)
		defer wcancel()
		n, err := ln.WaitForNotification(wctx)
		if err != nil {
			return ""
		}
		return n.Payload
	}
	recs := turnRecords(nil, "q", "a", false)
	closes := len(recs) - 2 // step/end
	require.Equal(t, session.TypeStepEnd, recs[closes].Type())
	// A step's records before its end, in one batch: a live session
	// under its lease hands them so (see live.Session's batches).
	require.NoError(t, s.Append(ctx, "s", 0, recs[:closes]))
	assert.Equal(t, fmt.Sprintf("e %d s", closes), next(10*time.Second), "notified at the commit")
	assert.Empty(t, next(300*time.Millisecond), "once")
	require.NoError(t, s.Append(ctx, "s", int64(closes), recs[closes:]))
	assert.Equal(t, fmt.Sprintf("e %d s", len(recs)), next(10*time.Second))
	assert.Empty(t, next(300*time.Millisecond), "once")
}

// channelListener is a raw LISTEN connection on one of a store's channels.
type channelListener struct {
	t  *testing.T
	ln *pgx.Conn
}

func listenTo(t *testing.T, ctx context.Context, channel string) *channelListener {
	ln, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close(context.Background()) })
	_, err = ln.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
	require.NoError(t, err)
	return &channelListener{t: t, ln: ln}
}

// drain returns the want payloads notified next (waiting up to 10 s for
// each), and any more notified within quiet after them.
func (l *channelListener) drain(want int, quiet time.Duration) []string {
	var got []string
	for {
		wait := quiet
		if len(got) < want {
			wait = 10 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		n, err := l.ln.WaitForNotification(ctx)
		cancel()
		if err != nil {
			require.ErrorIs(l.t, err, context.DeadlineExceeded)
			return got
		}
		got = append(got, n.Payload)
	}
}

// Appends notify the events channel, which followers listen to; jobs,
// releases and cancels the jobs channel, which claims, lease waiters and
// cancel watchers listen to. Neither audience is woken by the other's
// notifications: an API process that streams logs is not woken by the
// queue, nor a worker by every append.
func TestAppendsAndJobsNotifyTheirOwnChannels(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := pgtest.Store(t, pgstore.WithHolder("W"))
	require.NotEqual(t, pgstore.Channel(s), pgstore.JobsChannel(s))
	events := listenTo(t, ctx, pgstore.Channel(s))
	jobs := listenTo(t, ctx, pgstore.JobsChannel(s))
	quiet := 300 * time.Millisecond
	require.NoError(t, s.Create(ctx, session.Info{ID: "s", Created: epoch}))

	recs := turnRecords(nil, "q", "a", false)
	require.NoError(t, s.Append(ctx, "s", 0, recs))
	assert.Equal(t, []string{fmt.Sprintf("e %d s", len(recs))}, events.drain(1, quiet), "an append")
	assert.Empty(t, jobs.drain(0, quiet), "an append")

	_, _, err := s.Enqueue(ctx, session.Job{Session: "s", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, []string{"q 0 s"}, jobs.drain(1, quiet), "an enqueue")
	c := claimOf(t, s, "w")
	n, err := s.Cancel(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	assert.Equal(t, []string{"c 0 s"}, jobs.drain(1, quiet), "a cancel")
	<-c.Cancelled()
	require.NoError(t, c.Finish(ctx, session.Outcome{}))
	released := jobs.drain(1, quiet)
	require.Len(t, released, 1, "a release")
	assert.Regexp(t, `^l W#\S+ s$`, released[0])
	assert.Empty(t, events.drain(0, quiet), "a job's life")

	require.NoError(t, s.Delete(ctx, "s"))
	assert.Equal(t, []string{"e -1 s"}, events.drain(1, quiet), "a delete")
	assert.Equal(t, []string{"c 0 s"}, jobs.drain(1, quiet), "a delete")
}
