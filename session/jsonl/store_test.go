package jsonl_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// TestReadingAStoreCreatesNoDirectory: a store that is only read (vigil
// sessions list on a fresh machine) leaves no directory behind; the first
// create makes it.
func TestReadingAStoreCreatesNoDirectory(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a", "sessions")
	s, err := jsonl.Open(dir)
	require.NoError(t, err)
	defer s.Close()
	infos, err := s.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, infos)
	_, err = s.Load(ctx, "s1")
	assert.ErrorIs(t, err, session.ErrNotFound)
	assert.NoDirExists(t, filepath.Dir(dir))

	require.NoError(t, s.Create(ctx, session.Info{ID: "s1", Created: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}))
	assert.FileExists(t, s.Path("s1"))
}

func TestOpenRefusesAFileForItsDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	_, err := jsonl.Open(path)
	assert.ErrorContains(t, err, "not a directory")
}
