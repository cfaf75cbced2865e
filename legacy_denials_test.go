package vigil_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLogsWithDenialsInCallOrderVerify: the logs written before the loop
// logged a step's denials first (session/testdata/denials-in-call-order)
// still verify; the replay plugin's tests rerun them.
func TestLogsWithDenialsInCallOrderVerify(t *testing.T) {
	fixtures, err := filepath.Glob("session/testdata/denials-in-call-order/*.jsonl")
	require.NoError(t, err)
	require.Len(t, fixtures, 2)
	store := t.TempDir()
	for _, f := range fixtures {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		id := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		require.NoError(t, os.WriteFile(filepath.Join(store, id+".jsonl"), b, 0o644))
		verifyStored(t, store, id)
	}
}
