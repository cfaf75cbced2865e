package jsonl_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestStoreConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		s, err := jsonl.Open(t.TempDir())
		require.NoError(t, err)
		return s
	})
}
