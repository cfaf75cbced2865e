package pgstore_test

import (
	"testing"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestDeleteConformance(t *testing.T) {
	sessiontest.RunDelete(t, sessiontest.QueueHarness{
		New: func(t *testing.T) func(t *testing.T) session.Store {
			schema := pgtest.Schema(t)
			return func(t *testing.T) session.Store {
				return pgtest.StoreIn(t, schema, pgstore.WithLeaseTTL(queueTTL))
			}
		},
		Crash: func(t *testing.T, s session.Store) { pgstore.Crash(s.(*pgstore.Store)) },
	})
}
