package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// fencingHarness opens stores sharing one schema; a pause stops a store's
// renewals and expires its lease.
var fencingHarness = sessiontest.FencingHarness{
	New: func(t *testing.T) func(t *testing.T) sessiontest.FencedStore {
		schema := pgtest.Schema(t)
		return func(t *testing.T) sessiontest.FencedStore { return pgtest.StoreIn(t, schema) }
	},
	Pause: func(t *testing.T, h sessiontest.FencedStore, id string) func() {
		resume, err := pgstore.PauseLease(context.Background(), h.(*pgstore.Store), id)
		require.NoError(t, err)
		return func() { require.NoError(t, resume()) }
	},
}

func TestFencingConformance(t *testing.T) {
	sessiontest.RunFencing(t, fencingHarness)
}

// A database of schema version 1, with a session, its events and a live
// lease, is migrated in place: the log loads as it was, the old lease
// still counts, and the next lease has epoch 1.
func TestOpenMigratesAVersion1Database(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	recs := turnRecords(nil, "q", "a", false)
	var lines [][]byte
	for _, r := range recs {
		line := r.AppendLine(nil)
		lines = append(lines, line[:len(line)-1])
	}
	info := session.Info{ID: "old", Version: session.Version, Created: epoch}
	header := session.AppendHeaderLine(nil, info)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, sql := range []string{
			"CREATE SCHEMA " + pgx.Identifier{schema}.Sanitize(),
			"SET LOCAL search_path = " + pgx.Identifier{schema}.Sanitize(),
			pgstore.Migrations[0],
			`CREATE TABLE vigil_schema (version integer NOT NULL); INSERT INTO vigil_schema VALUES (1)`,
		} {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO vigil_sessions (id, header, created, next) VALUES ('old', $1, $2, $3)`,
			header[:len(header)-1], epoch, len(recs)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO vigil_events SELECT 'old', u.o - 1, u.line FROM unnest($1::bytea[]) WITH ORDINALITY AS u(line, o)`, lines); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO vigil_leases VALUES ('old', 'v1-process', clock_timestamp() + interval '1 hour')`)
		return err
	})
	require.NoError(t, err)

	s := pgtest.StoreIn(t, schema)
	log, err := s.Load(ctx, "old")
	require.NoError(t, err)
	require.Len(t, log.Records, len(recs))
	_, err = s.Lease(ctx, "old", false)
	require.ErrorIs(t, err, pgstore.ErrBusy, "the old process's lease still holds")
	require.ErrorContains(t, err, "v1-process")
	require.ErrorIs(t, s.Append(ctx, "old", int64(len(recs)), turnRecords(recs, "q2", "a", false)), pgstore.ErrBusy)

	_, err = conn.Exec(ctx, fmt.Sprintf(`DELETE FROM %s.vigil_leases`, pgx.Identifier{schema}.Sanitize()))
	require.NoError(t, err)
	release, err := s.Lease(ctx, "old", false)
	require.NoError(t, err)
	defer release()
	require.Equal(t, int64(1), s.Epoch("old"))
	require.NoError(t, s.Append(ctx, "old", int64(len(recs)), turnRecords(recs, "q2", "a", false)))
	_, _, err = s.Enqueue(ctx, session.Job{Session: "old", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
}

// Appends under an epoch racing with another holder taking the lease: none
// lands after the new holder loaded the log, since the epoch is checked
// by the append statement on the locked row.
func TestFencedAppendsRacingANewLeaseNeverLandAfterIt(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	for round := range 5 {
		releaseA, err := a.Lease(ctx, "s", false)
		require.NoError(t, err)
		e := a.Epoch("s")
		log, err := a.Load(ctx, "s")
		require.NoError(t, err)
		next := int64(len(log.Records))
		resume, err := pgstore.PauseLease(ctx, a, "s")
		require.NoError(t, err)
		fenced := make(chan int64, 1)
		go func() {
			// Append one event at a time until fenced (a bounded while).
			for range 2000 {
				r := turnRecords(nil, "q", "a", false)[0]
				rec, err := session.NewRecord(next, epoch, session.Event{Type: r.Type(), Turn: round + 1})
				if !assert.NoError(t, err) {
					fenced <- -1
					return
				}
				err = a.AppendFenced(ctx, "s", e, next, []session.Record{rec})
				if err != nil {
					assert.ErrorIs(t, err, session.ErrFenced)
					fenced <- next
					return
				}
				next++
			}
			fenced <- -2 // never fenced
		}()
		releaseB, err := b.Lease(ctx, "s", true)
		require.NoError(t, err)
		seen, err := b.Load(ctx, "s")
		require.NoError(t, err)
		stopped := <-fenced
		require.Equal(t, int64(len(seen.Records)), stopped, "round %d: an append landed after the new lease", round)
		log, err = b.Load(ctx, "s")
		require.NoError(t, err)
		require.Len(t, log.Records, len(seen.Records))
		releaseB()
		require.NoError(t, resume())
		releaseA()
	}
}
