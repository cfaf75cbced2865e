package invariants_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	pg "github.com/vigil-run/vigil/session/pgstore"
)

// TestRewrittenRowsAreFoundWithThePublicKey: a signed session kept in
// PostgreSQL, its rows rewritten with UPDATE statements, is found by
// verify --key as exported; untouched, it verifies as its JSONL twin
// would (one tree for both stores); and every forgery of the suite,
// written into the rows, is named as it is on JSONL.
func TestRewrittenRowsAreFoundWithThePublicKey(t *testing.T) {
	dsn := os.Getenv("VIGIL_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("VIGIL_TEST_POSTGRES_DSN is not set")
	}
	ctx := context.Background()
	schema := fmt.Sprintf("forgery_%d", time.Now().UnixNano())
	store, err := pg.Open(ctx, dsn, pg.WithSchema(schema))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		_ = conn.Close(context.Background())
	})

	signer, audit, forger := testKeys(t)
	info, _, _ := signedSession(t, signer, store)

	load := func() []byte {
		log, err := store.Load(ctx, info.ID)
		require.NoError(t, err)
		return exported(log)
	}
	rep, err := invariants.VerifyAudited(bytes.NewReader(load()), audit)
	require.NoError(t, err)
	require.Empty(t, rep.Integrity.Findings, "the untouched rows")

	// The usage no digest covers: verify alone finds nothing.
	tag, err := conn.Exec(ctx, `UPDATE `+schema+`.vigil_events
		SET line = convert_to(regexp_replace(convert_from(line, 'UTF8'), '"input":[0-9]+', '"input":1'), 'UTF8')
		WHERE session_id = $1 AND convert_from(line, 'UTF8') LIKE '%"type":"step/end"%'`, info.ID)
	require.NoError(t, err)
	require.Positive(t, tag.RowsAffected())
	data := load()
	plain, err := invariants.Verify(bytes.NewReader(data))
	require.NoError(t, err)
	require.Empty(t, plain.Violations, "the rewrite is consistent")
	rep, err = invariants.VerifyAudited(bytes.NewReader(data), audit)
	require.NoError(t, err)
	assert.Contains(t, kinds(rep.Integrity), invariants.FindingCheckpointMismatch)
	assert.Equal(t, invariants.VerdictInvalid, rep.Verdict())

	// Every forgery of the suite, its rows written in place of the
	// session's.
	info, records, receipts := signedSession(t, signer, store, forgeryPrompts...)
	checkForgeries(t, info, records, receipts, audit, forger, rewriteRows(conn, store, schema))

	t.Run("an approval's by changed", func(t *testing.T) {
		c, mgr, _, audit := signingWorldOn(t, store)
		checkDeciderForgery(t, c, mgr, audit, rewriteRows(conn, store, schema))
	})
	t.Run("a fork's inherited prefix edited", func(t *testing.T) {
		c, mgr, signer, audit := signingWorldOn(t, store)
		checkForkForgery(t, c, mgr, signer, audit, rewriteRows(conn, store, schema))
	})
}

// rewriteRows returns what a forger with the database does to put a log
// in place of a session's: the header row updated, the event rows
// deleted and inserted (a cut log, a dropped turn, a fabricated one);
// and the log the store then loads, exported.
func rewriteRows(conn *pgx.Conn, store session.Store, schema string) func(t *testing.T, data []byte) []byte {
	return func(t *testing.T, data []byte) []byte {
		ctx := context.Background()
		lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
		log, err := session.DecodeBytes(data)
		require.NoError(t, err)
		id := log.Info.ID
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		tag, err := tx.Exec(ctx, `UPDATE `+schema+`.vigil_sessions SET header = $2, created = $3, next = $4 WHERE id = $1`,
			id, lines[0], log.Info.Created, len(lines)-1)
		require.NoError(t, err)
		require.Equal(t, int64(1), tag.RowsAffected(), "the session's row")
		_, err = tx.Exec(ctx, `DELETE FROM `+schema+`.vigil_events WHERE session_id = $1`, id)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `INSERT INTO `+schema+`.vigil_events SELECT $1, u.o - 1, u.line FROM unnest($2::bytea[]) WITH ORDINALITY AS u(line, o)`,
			id, lines[1:])
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
		loaded, err := store.Load(ctx, id)
		require.NoError(t, err)
		return exported(loaded)
	}
}
