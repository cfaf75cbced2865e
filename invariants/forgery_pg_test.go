package invariants_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	pg "github.com/vigil-run/vigil/session/pgstore"
)

// TestRewrittenRowsAreFoundWithThePublicKey: a signed session kept in
// PostgreSQL, its rows rewritten with UPDATE statements, is found by
// verify --key as exported; untouched, it verifies as its JSONL twin
// would (one tree for both stores).
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

	skey, vkey, err := note.GenerateKey(rand.Reader, "vigil-audit-test")
	require.NoError(t, err)
	signer, err := note.NewSigner(skey)
	require.NoError(t, err)
	verifier, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	info, _, _ := signedSession(t, signer, store)
	audit := &invariants.Audit{Verifiers: note.VerifierList(verifier)}

	exported := func() []byte {
		log, err := store.Load(ctx, info.ID)
		require.NoError(t, err)
		out := session.AppendHeaderLine(nil, log.Info)
		for _, r := range log.Records {
			out = r.AppendLine(out)
		}
		return out
	}
	rep, err := invariants.VerifyAudited(bytes.NewReader(exported()), audit)
	require.NoError(t, err)
	require.Empty(t, rep.Integrity.Findings, "the untouched rows")

	// The usage no digest covers: verify alone finds nothing.
	tag, err := conn.Exec(ctx, `UPDATE `+schema+`.vigil_events
		SET line = convert_to(regexp_replace(convert_from(line, 'UTF8'), '"input":[0-9]+', '"input":1'), 'UTF8')
		WHERE session_id = $1 AND convert_from(line, 'UTF8') LIKE '%"type":"step/end"%'`, info.ID)
	require.NoError(t, err)
	require.Positive(t, tag.RowsAffected())
	data := exported()
	plain, err := invariants.Verify(bytes.NewReader(data))
	require.NoError(t, err)
	require.Empty(t, plain.Violations, "the rewrite is consistent")
	rep, err = invariants.VerifyAudited(bytes.NewReader(data), audit)
	require.NoError(t, err)
	assert.Contains(t, kinds(rep.Integrity), invariants.FindingCheckpointMismatch)
	assert.Equal(t, invariants.VerdictInvalid, rep.Verdict())
}
