package pgstore_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestFollowConformance(t *testing.T) {
	sessiontest.RunFollow(t, func(t *testing.T) func(t *testing.T) session.Store {
		schema := pgtest.Schema(t)
		return func(t *testing.T) session.Store { return pgtest.StoreIn(t, schema) }
	})
}

// A follower reads the log a batch at a time, and yields all of it.
func TestFollowConformanceInSmallBatches(t *testing.T) {
	defer pgstore.SetFollowBatch(2)()
	sessiontest.RunFollow(t, func(t *testing.T) func(t *testing.T) session.Store {
		schema := pgtest.Schema(t)
		return func(t *testing.T) session.Store { return pgtest.StoreIn(t, schema) }
	})
}

type followed struct {
	rec session.Record
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

// An API process streams events to many idle sessions at once: their
// followers must share one connection, not hold one each (a server would
// run out of them at max_connections), and keep following when that
// connection is cut.
func TestFollowersShareOneConnection(t *testing.T) {
	schema := pgtest.Schema(t)
	ctx := context.Background()
	app := "follow_" + schema
	s, err := pgstore.Open(ctx, withApp(pgtest.DSN(t), app), pgstore.WithSchema(schema), pgstore.WithMaxConns(2))
	require.NoError(t, err)
	defer s.Close()
	// The LISTEN connection is made in the background, and a follower's
	// first records come from a read that does not wait for it: listen
	// first, so that the count below finds it however slow the machine.
	require.NoError(t, pgstore.ListenEvents(ctx, s))
	const n = 20
	recs := turnRecords(nil, "q", "a", false)
	for i := range n {
		id := fmt.Sprintf("s%d", i)
		require.NoError(t, s.Create(ctx, session.Info{ID: id, Created: epoch}))
		require.NoError(t, s.Append(ctx, id, 0, recs[:1]))
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan followed, n+1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range n {
		wg.Go(func() {
			for r, err := range s.Follow(fctx, fmt.Sprintf("s%d", i), 0) {
				got <- followed{rec: r, err: err}
				if err != nil {
					return
				}
			}
		})
	}
	for range n {
		f := <-got
		require.NoError(t, f.err)
		require.Equal(t, int64(0), f.rec.Seq())
	}

	admin, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer admin.Close(ctx)
	var conns int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&conns))
	assert.LessOrEqual(t, conns, 3, "%d followers waiting: one LISTEN connection and at most 2 pooled", n)

	var cut int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND query LIKE 'LISTEN%'`, app).Scan(&cut))
	require.Equal(t, 1, cut, "the followers' LISTEN connection")
	require.NoError(t, s.Append(ctx, "s3", 1, recs[1:2]))
	select {
	case f := <-got:
		require.NoError(t, f.err)
		assert.Equal(t, string(recs[1].Bytes()), string(f.rec.Bytes()))
	case <-time.After(10 * time.Second):
		t.Fatal("the append after the LISTEN connection was cut woke no follower")
	}
}

// withApp sets the application_name of a URL or key=value DSN.
func withApp(dsn, app string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		q := u.Query()
		q.Set("application_name", app)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " application_name=" + app
}
