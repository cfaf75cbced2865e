package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// fencingHarness opens stores sharing one schema; a pause stops a store's
// renewals and expires its lease.
var fencingHarness = sessiontest.FencingHarness{
	New: func(t *testing.T) func() sessiontest.FencedStore {
		schema := pgtest.Schema(t)
		return func() sessiontest.FencedStore { return pgtest.StoreIn(t, schema) }
	},
	Pause: func(t *testing.T, h sessiontest.FencedStore, id string) func() {
		resume, err := pgstore.PauseLease(context.Background(), h.(*pgstore.Store), id)
		require.NoError(t, err)
		return func() { require.NoError(t, resume()) }
	},
}

func TestFencingConformance(t *testing.T) {
	sessiontest.RunFencing(t, fencingHarness)
}
