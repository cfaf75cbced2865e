package pgstore_test

import (
	"testing"
	"time"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// queueTTL is the lease TTL of the queue's tests: a crashed worker's job
// is claimed again after it.
const queueTTL = 2 * time.Second

func TestQueueConformance(t *testing.T) {
	sessiontest.RunQueue(t, sessiontest.QueueHarness{
		New: func(t *testing.T) func(t *testing.T) session.Store {
			schema := pgtest.Schema(t)
			return func(t *testing.T) session.Store {
				return pgtest.StoreIn(t, schema, pgstore.WithLeaseTTL(queueTTL))
			}
		},
		Crash: func(t *testing.T, s session.Store) { pgstore.Crash(s.(*pgstore.Store)) },
	})
}
