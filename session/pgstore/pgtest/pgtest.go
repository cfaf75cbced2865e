// Package pgtest gives tests a real PostgreSQL database: the DSN from
// VIGIL_TEST_POSTGRES_DSN (which .ci/postgres.sh exports) and a schema of
// their own in it, dropped when the test ends.
//
// Without a DSN a test is skipped, except under CI=true, where the server
// is part of the run and a missing DSN is a failure.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-run/vigil/session/pgstore"
)

// EnvDSN names the environment variable holding the test database's DSN.
const EnvDSN = "VIGIL_TEST_POSTGRES_DSN"

// DSN returns the test database's DSN, or skips t (fails it under CI=true)
// when there is none.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: CI must run the PostgreSQL tests (source .ci/postgres.sh)", EnvDSN)
		}
		t.Skipf("%s is not set; `. .ci/postgres.sh` starts a throw-away server", EnvDSN)
	}
	return dsn
}

// Schema returns the name of a schema for t alone (the stores create it)
// and drops it, with everything in it, when t ends.
func Schema(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return r
		}
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '_'
	}, t.Name())
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	name = "t_" + name + "_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	return name
}

// Store opens a store in a fresh schema (see [Schema]), closed when t
// ends.
func Store(t testing.TB, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	return StoreIn(t, Schema(t), opts...)
}

// StoreIn opens a store in schema, closed when t ends.
func StoreIn(t testing.TB, schema string, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, DSN(t), append([]pgstore.Option{pgstore.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatalf("pgtest: open store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
