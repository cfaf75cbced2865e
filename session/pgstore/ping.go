package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-run/vigil/session"
)

// Ping implements [session.Pinger]: a round trip to the database on a
// pooled connection.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.with(ctx, func(c *pgx.Conn) error { return c.Ping(ctx) }); err != nil {
		return session.StoreError("pgstore", "ping", "", err)
	}
	return nil
}

var _ session.Pinger = (*Store)(nil)
