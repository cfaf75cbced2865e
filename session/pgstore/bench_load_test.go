package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/internal/cputime"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// BenchmarkLoadPostgres loads a log of about 10,000 events of
// tool-calling turns, as a process opening a session it does not have
// open does: one round trip, then the decode (validation and fold
// included). It reports cpu-ns/event, this process's CPU time per event
// (the server's is not counted).
func BenchmarkLoadPostgres(b *testing.B) {
	ctx := context.Background()
	store := pgtest.Store(b)
	const id = "long"
	require.NoError(b, store.Create(ctx, session.Info{ID: id, Version: session.Version, Created: time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)}))
	var recs []session.Record
	for turn := 1; len(recs) < 10_000; turn++ {
		recs = append(recs, sessiontest.Turn(b, int64(len(recs)), turn)...)
	}
	for i := 0; i < len(recs); i += 1000 {
		require.NoError(b, store.Append(ctx, id, int64(i), recs[i:min(i+1000, len(recs))]))
	}
	b.ReportAllocs()
	c0 := cputime.Now()
	for b.Loop() {
		log, err := store.Load(ctx, id)
		require.NoError(b, err)
		require.Len(b, log.Records, len(recs))
	}
	b.ReportMetric(float64(cputime.Now()-c0)/float64(b.N)/float64(len(recs)), "cpu-ns/event")
}
