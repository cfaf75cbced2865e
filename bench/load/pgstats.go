package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCounters are PostgreSQL's cumulative counters at a point of the run:
// connections opened, transactions committed, WAL written and flushed
// (pg_stat_database, pg_stat_wal) and, when the pg_stat_statements
// extension can be created (the server preloads it: .ci/postgres.sh
// does), the calls of each statement.
type pgCounters struct {
	sessions, commits, xids, walSyncs, walRecords, walBytes int64
	statements                                              map[string]stmtCounts // query text → its counts; nil without the extension
}

// stmtCounts are a statement's calls, the rows they returned or
// changed, and the time spent executing them (pg_stat_statements).
type stmtCounts struct {
	calls, rows int64
	ms          float64 // time spent executing, in milliseconds
}

// pgSettle is how long the counters are left to settle before they are
// read: a backend reports its transactions to pg_stat_database when it
// next goes idle for a while (PGSTAT_IDLE_INTERVAL, 10 s).
const pgSettle = 11 * time.Second

// readPG reads the counters through one connection of its own (one
// session and a commit or two of its own, which the deltas leave out).
func readPG(ctx context.Context, dsn string) (pgCounters, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return pgCounters{}, fmt.Errorf("postgres: %w", err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	var p pgCounters
	// The next transaction id counts the transactions that wrote (only
	// those get one), in any database of the cluster.
	if err := c.QueryRow(ctx, `SELECT d.sessions, d.xact_commit, pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
		w.wal_sync, w.wal_records, w.wal_bytes::bigint
		FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = current_database()`).
		Scan(&p.sessions, &p.commits, &p.xids, &p.walSyncs, &p.walRecords, &p.walBytes); err != nil {
		return pgCounters{}, fmt.Errorf("postgres: counters: %w", err)
	}
	if _, err := c.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return p, nil // not preloaded: no statement counts
	}
	rows, err := c.Query(ctx, `SELECT query, sum(calls)::bigint, sum(rows)::bigint, sum(total_exec_time)::float8 FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) GROUP BY query`)
	if err != nil {
		return p, nil // preloaded but unreadable (shared_preload_libraries lacks it)
	}
	p.statements = map[string]stmtCounts{}
	for rows.Next() {
		var q string
		var n stmtCounts
		if err := rows.Scan(&q, &n.calls, &n.rows, &n.ms); err != nil {
			return pgCounters{}, fmt.Errorf("postgres: statements: %w", err)
		}
		p.statements[q] = n
	}
	if err := rows.Err(); err != nil {
		return pgCounters{}, fmt.Errorf("postgres: statements: %w", err)
	}
	return p, nil
}

// pgPerTurn is what the database did per turn between two readings.
type pgPerTurn struct {
	Connections float64 `json:"pg_connections_per_turn"`
	Commits     float64 `json:"pg_commits_per_turn"`
	Writes      float64 `json:"pg_writing_transactions_per_turn"`
	// SyncCommits are the writing transactions less the calls of the
	// statements that commit asynchronously (session/pgstore tags their
	// text, asyncTag): the commits that waited for a WAL flush.
	SyncCommits float64       `json:"pg_synchronous_commits_per_turn,omitempty"`
	WALFlushes  float64       `json:"pg_wal_flushes_per_turn"`
	WALRecords  float64       `json:"pg_wal_records_per_turn"`
	WALBytes    float64       `json:"pg_wal_bytes_per_turn"`
	Statements  float64       `json:"pg_statements_per_turn,omitempty"`
	Top         []pgStatement `json:"pg_top_statements,omitempty"`
}

// pgStatement is one statement's calls, and the time PostgreSQL spent
// executing it, per turn.
type pgStatement struct {
	Query   string  `json:"query"`
	PerTurn float64 `json:"per_turn"`
	MS      float64 `json:"exec_ms_per_turn"`
}

// perTurn is the delta from before to after, per turn, less the
// readings' own connection and statements (one each per reading).
func (after pgCounters) perTurn(before pgCounters, turns int) pgPerTurn {
	n := float64(turns)
	out := pgPerTurn{
		Connections: float64(after.sessions-before.sessions-1) / n,
		Commits:     float64(after.commits-before.commits) / n,
		Writes:      float64(after.xids-before.xids) / n,
		WALFlushes:  float64(after.walSyncs-before.walSyncs) / n,
		WALRecords:  float64(after.walRecords-before.walRecords) / n,
		WALBytes:    float64(after.walBytes-before.walBytes) / n,
	}
	if after.statements == nil || before.statements == nil {
		return out
	}
	var total, async int64
	for q, sc := range after.statements {
		if ownQuery(q) {
			continue
		}
		d := sc.calls - before.statements[q].calls
		if d <= 0 {
			continue
		}
		total += d
		if strings.Contains(q, asyncTag) {
			// A tagged statement commits asynchronously when it wrote;
			// each returns or changes one row then, none when it did not
			// (a claim that found no job: no transaction id either).
			async += min(d, sc.rows-before.statements[q].rows)
		}
		out.Top = append(out.Top, pgStatement{Query: q, PerTurn: float64(d) / n, MS: (sc.ms - before.statements[q].ms) / n})
	}
	out.Statements = float64(total) / n
	out.SyncCommits = float64(after.xids-before.xids-async) / n
	slices.SortFunc(out.Top, func(a, b pgStatement) int {
		switch {
		case a.PerTurn > b.PerTurn:
			return -1
		case a.PerTurn < b.PerTurn:
			return 1
		}
		return strings.Compare(a.Query, b.Query)
	})
	out.Top = out.Top[:min(len(out.Top), 12)]
	return out
}

// asyncTag marks the statements session/pgstore commits asynchronously.
const asyncTag = "/* vigil: asynchronous commit */"

// ownQuery reports whether q is one of readPG's.
func ownQuery(q string) bool {
	return strings.Contains(q, "pg_stat_") || strings.HasPrefix(q, "CREATE EXTENSION")
}

// print writes the per-turn figures, and the statements most called.
func (p pgPerTurn) print(w io.Writer) {
	fmt.Fprintf(w, "  PostgreSQL per turn: %.2f commits (%.2f of transactions that wrote), %.2f WAL flushes, %.1f WAL records (%.0f bytes), %.2f connections opened",
		p.Commits, p.Writes, p.WALFlushes, p.WALRecords, p.WALBytes, p.Connections)
	if p.Statements > 0 {
		fmt.Fprintf(w, ", %.1f statements, %.2f synchronous commits (of writing transactions); the most called (calls, then ms executing, per turn):\n", p.Statements, p.SyncCommits)
		for _, s := range p.Top {
			fmt.Fprintf(w, "    %6.2f %6.3f  %s\n", s.PerTurn, s.MS, oneLine(s.Query, 100))
		}
		return
	}
	fmt.Fprintln(w, " (no statement counts: preload pg_stat_statements)")
}

// oneLine folds q's white space and cuts it to n bytes.
func oneLine(q string, n int) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > n {
		q = q[:n] + "…"
	}
	return q
}
