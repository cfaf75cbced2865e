package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrations are the schema's versions: migrations[i] takes a database
// from version i to version i+1. Append only; never edit a released one.
var migrations = []string{
	// 1: sessions, events, leases.
	`CREATE TABLE vigil_sessions (
		id         text PRIMARY KEY,
		header     bytea NOT NULL,             -- the canonical header line, without its newline
		created    timestamptz NOT NULL,
		parent_id  text,
		parent_seq bigint,
		next       bigint NOT NULL DEFAULT 0 CHECK (next >= 0) -- the log's length: the seq of the next event
	);
	-- No foreign key to vigil_sessions: an append locks the session row
	-- (to move its length) and a key check would lock it again in another
	-- mode, making a multixact per append. Events are only ever inserted
	-- by statements that found their session.
	CREATE TABLE vigil_events (
		session_id text NOT NULL,
		seq        bigint NOT NULL CHECK (seq >= 0),
		line       bytea NOT NULL,             -- the canonical record line, without its newline
		PRIMARY KEY (session_id, seq)
	);
	CREATE TABLE vigil_leases (
		session_id text PRIMARY KEY REFERENCES vigil_sessions (id) ON DELETE CASCADE,
		holder     text NOT NULL,
		expires    timestamptz NOT NULL
	);`,
	// 2: fencing epochs and the job queue.
	`-- The epoch of the newest lease taken on the session: every lease
	-- taken moves it up by one, and an append under a lease is refused
	-- unless the session is still at that lease's epoch.
	ALTER TABLE vigil_sessions ADD COLUMN epoch bigint NOT NULL DEFAULT 0;
	-- The jobs not finished yet. No foreign key to vigil_sessions, for the
	-- reason given for vigil_events: an enqueue inserts only for a session
	-- it found.
	CREATE TABLE vigil_jobs (
		id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		session_id text NOT NULL,
		kind       text NOT NULL,
		input      bytea NOT NULL,
		enqueued   timestamptz NOT NULL,
		base       bigint NOT NULL DEFAULT -1,   -- the log's length when first started, -1 before
		attempts   integer NOT NULL DEFAULT 0,   -- claims so far
		state      text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running')),
		worker     text,                         -- the worker of the latest claim
		epoch      bigint,                       -- the lease epoch of the latest claim
		cancelled  boolean NOT NULL DEFAULT false -- cancelled while running
	);
	CREATE INDEX vigil_jobs_session ON vigil_jobs (session_id, id);`,
	// 3: the call a decision job decides, and the finished jobs.
	`ALTER TABLE vigil_jobs ADD COLUMN call text;      -- the tool call a decision job decides
	ALTER TABLE vigil_jobs ADD COLUMN started timestamptz; -- when first started
	-- One unfinished job per session and call: two decisions on one call
	-- are refused by the index, whatever the processes.
	CREATE UNIQUE INDEX vigil_jobs_call ON vigil_jobs (session_id, call) WHERE call IS NOT NULL;
	-- Finished jobs, kept for a while (session.FinishedJobTTL) so that a
	-- job's outcome can be read: a row of vigil_jobs moves here as it ends.
	CREATE TABLE vigil_jobs_done (
		id            bigint PRIMARY KEY,
		session_id    text NOT NULL,
		kind          text NOT NULL,
		call          text,
		input         bytea NOT NULL,
		enqueued      timestamptz NOT NULL,
		started       timestamptz,
		finished      timestamptz NOT NULL,
		base          bigint NOT NULL,
		attempts      integer NOT NULL,
		worker        text,
		state         text NOT NULL CHECK (state IN ('done', 'failed', 'cancelled')),
		error_code    text,
		error_message text,
		reason        text
	);
	CREATE INDEX vigil_jobs_done_call ON vigil_jobs_done (session_id, call) WHERE call IS NOT NULL;
	CREATE INDEX vigil_jobs_done_finished ON vigil_jobs_done (finished);`,
	// 4: the tools' ledger (ledger.go).
	ledgerMigration,
	// 5: a finished turn job's receipt.
	`ALTER TABLE vigil_jobs_done ADD COLUMN checkpoint text; -- the signed checkpoint the turn ended with`,
	// 6: staged appends (stage.go).
	`-- The seq of the first event an append staged (committed without
	-- waiting for the WAL's flush) and no synchronous commit has made
	-- durable since; NULL when every event is durable. Followers read up
	-- to it.
	ALTER TABLE vigil_sessions ADD COLUMN volatile bigint;`,
	// 7: the lease behind each epoch (lease.go).
	`-- The holder name of the lease that moved the session to its epoch:
	-- a name unique to one lease (holder#seq). A claim commits without
	-- waiting for the WAL's flush, and a database that crashes before the
	-- flush loses it: the epoch goes back, and the next lease takes the
	-- same number. An append under a lease, and a claim's job updates,
	-- compare the epoch and this name, so the lost lease's holder is
	-- refused all the same.
	ALTER TABLE vigil_sessions ADD COLUMN holder text;
	-- The holder name of the latest claim's lease (see above).
	ALTER TABLE vigil_jobs ADD COLUMN holder text;`,
	// 8: two NOTIFY channels (store.go, channelName). The tables are as
	// they were, but a process of version 7 listens on one channel, where
	// no job, release or cancel is notified any more: the version keeps
	// it from starting on this schema.
	`COMMENT ON TABLE vigil_jobs IS 'Jobs, lease releases and cancels notify the channel vigil.jobs:<schema>; appends vigil:<schema>.'`,
}

// SchemaVersion is the version of the tables this package reads and
// writes, for an operator's tool that compares a database with this build
// (vigil_schema holds the database's).
var SchemaVersion = len(migrations)

// migrate creates or upgrades the tables in the connection's current
// schema (creating the schema first when one was named), serialized with
// other processes by an advisory lock held for the transaction.
func migrate(ctx context.Context, conn *pgx.Conn, schema string) (current string, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if schema != "" {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('vigil/schema/' || $1::text))`, schema); err != nil {
			return "", fmt.Errorf("lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return "", fmt.Errorf("create schema %s: %w", schema, err)
		}
	}
	var cur *string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&cur); err != nil {
		return "", err
	}
	if cur == nil {
		return "", errors.New("no schema to keep the tables in: no schema of the search_path exists (name one with the schema option)")
	}
	if schema == "" {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('vigil/schema/' || $1::text))`, *cur); err != nil {
			return "", fmt.Errorf("lock: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS vigil_schema (version integer NOT NULL)`); err != nil {
		return "", fmt.Errorf("create vigil_schema: %w", err)
	}
	var version int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM vigil_schema`).Scan(&version); err != nil {
		return "", fmt.Errorf("read the schema version: %w", err)
	}
	if version > SchemaVersion {
		return "", fmt.Errorf("%w: schema %q is at version %d, this vigil knows versions up to %d; upgrade vigil", ErrSchemaTooNew, *cur, version, SchemaVersion)
	}
	for v := version; v < SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return "", fmt.Errorf("migrate schema %q to version %d: %w", *cur, v+1, err)
		}
	}
	if version != SchemaVersion {
		if _, err := tx.Exec(ctx, `DELETE FROM vigil_schema`); err != nil {
			return "", err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO vigil_schema (version) VALUES ($1)`, SchemaVersion); err != nil {
			return "", err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return "", err
	}
	return *cur, nil
}
