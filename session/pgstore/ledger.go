package pgstore

import (
	"bytes"
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/vigil-run/vigil/session"
)

// ledgerMigration is migration 4: a session's ledger ([session.Ledger]),
// one row per key. Unlike vigil_events it has a foreign key to its
// session, deleting with it: an entry is written once per tool call, not
// per append, so the key check's lock costs nothing that matters, and a
// session's deletion takes its entries with it, whoever deletes it. The
// key is bytea: a call id may hold a NUL, which text cannot.
const ledgerMigration = `CREATE TABLE vigil_ledger (
		session_id text NOT NULL REFERENCES vigil_sessions (id) ON DELETE CASCADE,
		key        bytea NOT NULL,             -- the idempotency key, UTF-8
		value      bytea NOT NULL,
		PRIMARY KEY (session_id, key)
	);`

// recordSQL inserts an entry unless its key has one, committed
// synchronously whatever the server's synchronous_commit (as flushSQL):
// Record returns a durable entry.
const recordSQL = `WITH cfg AS (
	SELECT set_config('synchronous_commit',
		CASE current_setting('synchronous_commit') WHEN 'off' THEN 'local' ELSE current_setting('synchronous_commit') END, true) AS v
)
INSERT INTO vigil_ledger (session_id, key, value)
SELECT $1, $2, $3 FROM cfg WHERE cfg.v IS NOT NULL
ON CONFLICT (session_id, key) DO NOTHING`

// Record implements [session.Ledger]. When the key has an entry, the
// insert does nothing and a second statement reads the entry (a new
// snapshot: one committed by a concurrent Record while the insert waited
// for it is seen).
func (s *Store) Record(ctx context.Context, id, key string, value []byte) ([]byte, error) {
	if err := session.CheckLedgerKey(id, key); err != nil {
		return nil, session.StoreError("pgstore", "ledger", id, err)
	}
	if value == nil {
		value = []byte{}
	}
	tag, err := s.exec(ctx, recordSQL, id, []byte(key), value)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "23503": // foreign_key_violation
		return nil, session.NotFound(id)
	case err != nil:
		return nil, session.StoreError("pgstore", "ledger", id, err)
	case tag.RowsAffected() == 1:
		return bytes.Clone(value), nil
	}
	v, ok, err := s.Lookup(ctx, id, key)
	if err == nil && !ok { // its session was deleted, with its entries, meanwhile
		err = session.NotFound(id)
	}
	return v, err
}

// Lookup implements [session.Ledger].
func (s *Store) Lookup(ctx context.Context, id, key string) ([]byte, bool, error) {
	if err := session.CheckLedgerKey(id, key); err != nil {
		return nil, false, session.StoreError("pgstore", "ledger", id, err)
	}
	var value []byte
	var known bool
	err := s.queryRow(ctx, []any{&known, &value}, `SELECT true, (SELECT value FROM vigil_ledger WHERE session_id = $1 AND key = $2)
		FROM vigil_sessions WHERE id = $1`, id, []byte(key))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false, session.NotFound(id)
	case err != nil:
		return nil, false, session.StoreError("pgstore", "ledger", id, err)
	case value == nil:
		return nil, false, nil
	}
	return value, true, nil
}

var _ session.Ledger = (*Store)(nil)
