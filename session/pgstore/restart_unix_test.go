//go:build unix

package pgstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// TestFollowCarriesOnAcrossARestart: the database restarting under a
// follower cuts its connection; it connects again and yields what was
// appended meanwhile and after, with no error, gap or repeat.
func TestFollowCarriesOnAcrossARestart(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	open := func() *pgstore.Store {
		s, err := pgstore.Open(context.Background(), cluster.DSN(), pgstore.WithSchema("follow"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	writer, reader := open(), open()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, writer.Create(ctx, session.Info{ID: "s", Created: epoch}))
	recs := turnRecords(nil, "q", "a", false)
	require.NoError(t, writer.Append(ctx, "s", 0, recs[:3]))

	got := make(chan followed, 100)
	go func() {
		defer close(got)
		for r, err := range reader.Follow(ctx, "s", 0) {
			got <- followed{rec: r, err: err}
			if err != nil || r.Seq() == int64(len(recs)-1) {
				return
			}
		}
	}()
	next := func() session.Record {
		f, ok := <-got
		require.True(t, ok, "the follow ended")
		require.NoError(t, f.err)
		return f.rec
	}
	for i := range 3 {
		require.Equal(t, string(recs[i].Bytes()), string(next().Bytes()))
	}
	cluster.Restart(100 * time.Millisecond)
	// A new store: the writer's pooled connections died with the server.
	writer = open()
	require.NoError(t, writer.Append(ctx, "s", 3, recs[3:4]))
	require.NoError(t, writer.Append(ctx, "s", 4, recs[4:]))
	for i := 3; i < len(recs); i++ {
		require.Equal(t, string(recs[i].Bytes()), string(next().Bytes()))
	}
	_, more := <-got
	require.False(t, more)
}

// TestCallsWorkOnceARestartedServerIsBack: the pooled connections a
// restart broke are not handed out to fail once the server is back. Idle
// for long, they are pinged; idle briefly, they are pinged too once
// another connection was found broken (during the outage, here).
func TestCallsWorkOnceARestartedServerIsBack(t *testing.T) {
	for _, c := range []struct {
		name     string
		pingIdle time.Duration
		outage   bool // a call fails during the outage
	}{
		{"idle past the ping delay", time.Millisecond, false},
		{"idle briefly, after a broken connection", time.Hour, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			pgstore.SetPingAfter(t, c.pingIdle)
			cluster := pgtest.NewCluster(t)
			s, err := pgstore.Open(context.Background(), cluster.DSN(), pgstore.WithSchema("pool"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, s.Create(ctx, session.Info{ID: "s", Created: epoch}))
			loads := func() []error {
				errs := make([]error, 8) // at once: the pool holds 8 connections
				var wg sync.WaitGroup
				for i := range errs {
					wg.Go(func() { _, errs[i] = s.Load(ctx, "s") })
				}
				wg.Wait()
				return errs
			}
			require.Equal(t, make([]error, 8), loads())
			cluster.Stop()
			if c.outage {
				_, err := s.Load(ctx, "s")
				require.Error(t, err)
			}
			cluster.Start()
			assert.Equal(t, make([]error, 8), loads())
		})
	}
}

// TestAnAppendSurvivesItsConnectionBreaking: an append whose pooled
// connection the server closed (its backend terminated, as a restart or
// an idle timeout would) is made once more on another connection, not
// failed: the log gets each record once.
func TestAnAppendSurvivesItsConnectionBreaking(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	s, err := pgstore.Open(context.Background(), cluster.DSN(), pgstore.WithSchema("append"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, s.Create(ctx, session.Info{ID: "s", Created: epoch}))
	recs := turnRecords(nil, "q", "a", false)
	require.NoError(t, s.Append(ctx, "s", 0, recs[:3]))

	admin, err := pgx.Connect(ctx, cluster.DSN())
	require.NoError(t, err)
	defer admin.Close(ctx)
	var killed int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&killed))
	require.Positive(t, killed, "the store's pooled connection")

	require.NoError(t, s.Append(ctx, "s", 3, recs[3:]))
	log, err := s.Load(ctx, "s")
	require.NoError(t, err)
	require.Len(t, log.Records, len(recs))
	for i, r := range recs {
		assert.Equal(t, string(r.Bytes()), string(log.Records[i].Bytes()))
	}
	// Had the first try committed, the retry's refusal is recognised as
	// that commit, byte for byte, and only that.
	assert.True(t, pgstore.Stored(ctx, s, "s", 3, recs[3:]))
	assert.False(t, pgstore.Stored(ctx, s, "s", 2, recs[3:]))
	assert.False(t, pgstore.Stored(ctx, s, "s", 3, append(recs[3:len(recs):len(recs)], recs[0])))
}
