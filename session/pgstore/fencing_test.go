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

// A claim commits without waiting for the WAL's flush. A database that
// crashes before the flush loses it: the session's epoch and the job's
// row go back, and the lease row is gone. The next claim then takes the
// same epoch number; the first holder, back on a new connection, must be
// fenced all the same, in every write it makes under its claim.
func TestALostClaimsHolderIsFencedByTheNextClaimOfTheSameEpoch(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	a := pgtest.StoreIn(t, schema, pgstore.WithHolder("A"))
	b := pgtest.StoreIn(t, schema, pgstore.WithHolder("B"))
	require.NoError(t, a.Create(ctx, session.Info{ID: "s", Created: epoch}))
	recs := turnRecords(nil, "q", "a", false)
	require.NoError(t, a.Append(ctx, "s", 0, recs))
	n := int64(len(recs))
	_, _, err := a.Enqueue(ctx, session.Job{Session: "s", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)

	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SET search_path = "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	// The rows as the crash leaves them: as they were before the claim.
	var before struct {
		epoch    int64
		holder   *string
		state    string
		worker   *string
		jepoch   *int64
		jholder  *string
		attempts int
	}
	require.NoError(t, conn.QueryRow(ctx, `SELECT s.epoch, s.holder, j.state, j.worker, j.epoch, j.holder, j.attempts
		FROM vigil_sessions s JOIN vigil_jobs j ON j.session_id = s.id WHERE s.id = 's'`).
		Scan(&before.epoch, &before.holder, &before.state, &before.worker, &before.jepoch, &before.jholder, &before.attempts))

	ca := claimOf(t, a, "wa")
	e := a.Epoch("s")
	require.Equal(t, before.epoch+1, e)
	_, err = conn.Exec(ctx, `UPDATE vigil_sessions SET epoch = $1, holder = $2 WHERE id = 's'`, before.epoch, before.holder)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `DELETE FROM vigil_leases WHERE session_id = 's'`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `UPDATE vigil_jobs SET state = $1, worker = $2, epoch = $3, holder = $4, attempts = $5 WHERE session_id = 's'`,
		before.state, before.worker, before.jepoch, before.jholder, before.attempts)
	require.NoError(t, err)

	cb := claimOf(t, b, "wb")
	require.Equal(t, e, b.Epoch("s"), "the next claim takes the lost claim's epoch number")

	more := turnRecords(recs, "q2", "a2", false)
	require.ErrorIs(t, a.Append(ctx, "s", n, more), session.ErrFenced)
	require.ErrorIs(t, a.AppendFenced(ctx, "s", e, n, more), session.ErrFenced)
	require.ErrorIs(t, a.AppendStaged(ctx, "s", n, more[:2]), session.ErrFenced)
	require.ErrorIs(t, ca.Start(ctx, n), session.ErrFenced)
	require.NoError(t, a.AppendDeferred(ctx, "s", n, more), "kept for the claim's finish")
	require.ErrorIs(t, ca.Finish(ctx, session.Outcome{}), session.ErrFenced)
	jobs, err := b.Jobs(ctx, "s")
	require.NoError(t, err)
	require.Len(t, jobs, 1, "the job is still the new claim's")
	require.Equal(t, session.JobRunning, jobs[0].State)
	require.Equal(t, "wb", jobs[0].Worker)

	require.NoError(t, cb.Start(ctx, n))
	require.NoError(t, b.Append(ctx, "s", n, more), "the new holder appends")
	require.NoError(t, cb.Finish(ctx, session.Outcome{}))
	log, err := b.Load(ctx, "s")
	require.NoError(t, err)
	require.Len(t, log.Records, len(recs)+len(more))
	data, err := b.Export(ctx, "s")
	require.NoError(t, err)
	requireVerified(t, data)
}

// A claim under a lost lease that was released (its job handed back)
// leaves the new claim's job alone too.
func TestALostClaimsReleaseLeavesTheNextClaimsJob(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	a := pgtest.StoreIn(t, schema, pgstore.WithHolder("A"))
	b := pgtest.StoreIn(t, schema, pgstore.WithHolder("B"))
	require.NoError(t, a.Create(ctx, session.Info{ID: "s", Created: epoch}))
	_, _, err := a.Enqueue(ctx, session.Job{Session: "s", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SET search_path = "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)

	ca := claimOf(t, a, "wa")
	_, err = conn.Exec(ctx, `UPDATE vigil_sessions SET epoch = epoch - 1, holder = NULL WHERE id = 's';
		DELETE FROM vigil_leases WHERE session_id = 's';
		UPDATE vigil_jobs SET state = 'queued', worker = NULL, epoch = NULL, holder = NULL, attempts = 0 WHERE session_id = 's'`)
	require.NoError(t, err)
	cb := claimOf(t, b, "wb")
	require.Equal(t, a.Epoch("s"), b.Epoch("s"))

	require.ErrorIs(t, ca.Release(ctx), session.ErrFenced)
	jobs, err := b.Jobs(ctx, "s")
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, session.JobRunning, jobs[0].State, "still the new claim's")
	require.NoError(t, cb.Start(ctx, 0))
	require.NoError(t, cb.Finish(ctx, session.Outcome{}))
}
