//go:build unix

package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterRestarts: a cluster of the test's own takes connections,
// refuses them while stopped, and takes them again once restarted, on
// the same DSN, its data kept.
func TestClusterRestarts(t *testing.T) {
	c := NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DSN())
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)`)
	require.NoError(t, err)

	c.Stop()
	assert.Error(t, conn.Ping(ctx), "the server's connections are cut")
	_, err = pgx.Connect(ctx, c.DSN())
	assert.Error(t, err, "a stopped server takes no connection")

	c.Start()
	conn, err = pgx.Connect(ctx, c.DSN())
	require.NoError(t, err)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT n FROM kept`).Scan(&n))
	assert.Equal(t, 42, n)

	c.Restart(100 * time.Millisecond)
	assert.Error(t, conn.Ping(ctx), "a restart cuts the connections")
	_ = conn.Close(ctx)
	conn, err = pgx.Connect(ctx, c.DSN())
	require.NoError(t, err)
	defer conn.Close(ctx)
	require.NoError(t, conn.QueryRow(ctx, `SELECT n FROM kept`).Scan(&n))
	assert.Equal(t, 42, n)
}
