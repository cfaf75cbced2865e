package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestStoreConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		return pgtest.Store(t)
	})
}

func TestTailConformance(t *testing.T) {
	sessiontest.RunTail(t, func(t *testing.T) session.Store {
		return pgtest.Store(t)
	})
}

func TestStoreConformanceWithDurableAppends(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		return pgtest.Store(t, pgstore.WithDurableAppends())
	})
}

// newManager returns a manager with a fixed clock and ids s1, s2, …
func newManager(t *testing.T, store session.Store) *live.Manager {
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	n := 0
	return live.NewManager(root.Context(), store,
		live.WithClock(func() time.Time { return epoch }),
		live.WithIDs(func() string { n++; return fmt.Sprintf("s%d", n) }))
}

func TestLogIsByteIdenticalToJSONL(t *testing.T) {
	ctx := context.Background()
	js, err := jsonl.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = js.Close() })
	pg := pgtest.Store(t)
	for _, store := range []session.Store{js, pg} {
		m := newManager(t, store)
		sess, err := m.Create(ctx)
		require.NoError(t, err)
		require.NoError(t, appendTurn(ctx, sess, "hello <&> \"é\" \u2028", "hi", false))
		require.NoError(t, appendTurn(ctx, sess, "list", "", true))
		require.NoError(t, sess.Close(ctx))
		fork, err := m.Fork(ctx, sess.ID(), 8)
		require.NoError(t, err)
		require.NoError(t, fork.Close(ctx))
	}
	for _, id := range []string{"s1", "s2"} {
		want, err := os.ReadFile(js.Path(id))
		require.NoError(t, err)
		got, err := pg.Export(ctx, id)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "session %s", id)

		log, err := pg.Load(ctx, id)
		require.NoError(t, err)
		require.Equal(t, string(want), string(encode(log.Info, log.Records)))
	}
}

func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	s := pgtest.StoreIn(t, schema)
	require.NoError(t, s.Create(ctx, session.Info{ID: "kept", Created: epoch}))

	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf("UPDATE %s.vigil_schema SET version = 99", pgx.Identifier{schema}.Sanitize()))
	require.NoError(t, err)

	_, err = pgstore.Open(ctx, pgtest.DSN(t), pgstore.WithSchema(schema))
	require.ErrorIs(t, err, pgstore.ErrSchemaTooNew)
	require.ErrorContains(t, err, "version 99")
	require.ErrorContains(t, err, fmt.Sprintf("up to %d", pgstore.SchemaVersion))

	// Nothing was touched.
	var version int
	require.NoError(t, conn.QueryRow(ctx, fmt.Sprintf("SELECT version FROM %s.vigil_schema", pgx.Identifier{schema}.Sanitize())).Scan(&version))
	require.Equal(t, 99, version)
	_, err = s.Load(ctx, "kept")
	require.NoError(t, err)
}

func TestOpenMigratesOnceUnderConcurrentStarts(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			s, err := pgstore.Open(ctx, pgtest.DSN(t), pgstore.WithSchema(schema))
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var rows, version int
	require.NoError(t, conn.QueryRow(ctx, fmt.Sprintf("SELECT count(*), max(version) FROM %s.vigil_schema", pgx.Identifier{schema}.Sanitize())).Scan(&rows, &version))
	require.Equal(t, 1, rows)
	require.Equal(t, pgstore.SchemaVersion, version)
}

func TestOpenUsesTheSearchPathWithoutASchema(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)

	dsn := fmt.Sprintf("%s&options=-csearch_path%%3D%s", pgtest.DSN(t), schema)
	s, err := pgstore.Open(ctx, dsn)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, schema, s.Schema())
	require.NoError(t, s.Create(ctx, session.Info{ID: "here", Created: epoch}))
	var n int
	require.NoError(t, conn.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s.vigil_sessions", pgx.Identifier{schema}.Sanitize())).Scan(&n))
	require.Equal(t, 1, n)
}

func TestOpenReportsAMissingSchemaOnTheSearchPath(t *testing.T) {
	dsn := pgtest.DSN(t) + "&options=-csearch_path%3Dno_such_schema_anywhere"
	_, err := pgstore.Open(context.Background(), dsn)
	require.ErrorContains(t, err, "no schema to keep the tables in")
}

func TestOpenRefusesABadDSN(t *testing.T) {
	_, err := pgstore.Open(context.Background(), "postgres://u:secret@127.0.0.1:1/x?connect_timeout=1&sslmode=disable")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")
}

func TestAppendsAreVisibleToOtherStoresAtOnce(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	a, b := pgtest.StoreIn(t, schema), pgtest.StoreIn(t, schema)
	require.NoError(t, a.Create(ctx, session.Info{ID: "s", Created: epoch}))
	recs := turnRecords(nil, "q", "a", false)
	// Mid-step records commit asynchronously: still visible at once.
	require.NoError(t, a.Append(ctx, "s", 0, recs[:6]))
	log, err := b.Load(ctx, "s")
	require.NoError(t, err)
	require.Len(t, log.Records, 6)
	require.ErrorIs(t, b.Append(ctx, "s", 5, recs[5:]), session.ErrConflict)
	require.NoError(t, b.Append(ctx, "s", 6, recs[6:]))
	require.ErrorIs(t, a.Append(ctx, "s", 6, recs[6:]), session.ErrConflict)
	require.NoError(t, a.Flush(ctx, "s"))
	log, err = a.Load(ctx, "s")
	require.NoError(t, err)
	requireVerified(t, encode(log.Info, log.Records))
}

func TestConflictErrorSaysWhereTheLogContinues(t *testing.T) {
	ctx := context.Background()
	s := pgtest.Store(t)
	require.NoError(t, s.Create(ctx, session.Info{ID: "s", Created: epoch}))
	recs := turnRecords(nil, "q", "a", false)
	require.NoError(t, s.Append(ctx, "s", 0, recs[:3]))
	err := s.Append(ctx, "s", 3, recs[2:3])
	require.ErrorIs(t, err, session.ErrDuplicateSeq, "seqs are checked before the database")
	err = s.Append(ctx, "s", 2, recs[2:4])
	require.ErrorIs(t, err, session.ErrConflict)
	require.ErrorContains(t, err, "continues at 3, not 2")
}

func TestListNamesACorruptHeader(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	s := pgtest.StoreIn(t, schema)
	require.NoError(t, s.Create(ctx, session.Info{ID: "good", Created: epoch}))
	require.NoError(t, s.Create(ctx, session.Info{ID: "bad", Created: epoch}))
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf(`UPDATE %s.vigil_sessions SET header = 'not json' WHERE id = 'bad'`, pgx.Identifier{schema}.Sanitize()))
	require.NoError(t, err)
	list, err := s.List(ctx)
	require.ErrorIs(t, err, session.ErrCorrupt)
	require.ErrorContains(t, err, "session bad")
	var le *session.ListError
	require.ErrorAs(t, err, &le)
	require.Len(t, le.Entries, 1)
	assert.Equal(t, "session bad", le.Entries[0].Name)
	require.Len(t, list, 1, "the readable session is listed all the same")
	assert.Equal(t, "good", list[0].ID)
	_, err = s.Load(ctx, "bad")
	require.ErrorIs(t, err, session.ErrCorrupt)
	_, err = s.Load(ctx, "good")
	require.NoError(t, err)
}

func TestClosedStoreRefusesWork(t *testing.T) {
	ctx := context.Background()
	s := pgtest.Store(t)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is fine")
	err := s.Create(ctx, session.Info{ID: "s", Created: epoch})
	require.Error(t, err)
	assert.False(t, errors.Is(err, session.ErrExists))
}
