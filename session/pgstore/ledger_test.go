package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestLedgerConformance(t *testing.T) {
	sessiontest.RunLedger(t, func(t *testing.T) func(t *testing.T) session.Store {
		schema := pgtest.Schema(t)
		return func(t *testing.T) session.Store { return pgtest.StoreIn(t, schema) }
	})
}

// A session's ledger goes with it: deleting its row deletes its entries
// (the foreign key cascades), and a new session of the same id starts
// with none.
func TestLedgerIsDeletedWithItsSession(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	s := pgtest.StoreIn(t, schema)
	require.NoError(t, s.Create(ctx, session.Info{ID: "s1", Created: epoch}))
	require.NoError(t, s.Create(ctx, session.Info{ID: "s2", Created: epoch}))
	for _, id := range []string{"s1", "s2"} {
		_, err := s.Record(ctx, id, id+"/call_1", []byte("done"))
		require.NoError(t, err)
	}

	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DELETE FROM `+pgx.Identifier{schema, "vigil_sessions"}.Sanitize()+` WHERE id = 's1'`)
	require.NoError(t, err)
	var left []string
	rows, err := conn.Query(ctx, `SELECT session_id FROM `+pgx.Identifier{schema, "vigil_ledger"}.Sanitize())
	require.NoError(t, err)
	left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{"s2"}, left, "s1's entries went with it")

	_, _, err = s.Lookup(ctx, "s1", "s1/call_1")
	assert.ErrorIs(t, err, session.ErrNotFound)
	require.NoError(t, s.Create(ctx, session.Info{ID: "s1", Created: epoch}))
	_, ok, err := s.Lookup(ctx, "s1", "s1/call_1")
	require.NoError(t, err)
	assert.False(t, ok, "a new session of the id finds nothing of the old one's")
}
