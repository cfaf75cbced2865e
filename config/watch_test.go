package config_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
)

func TestWatchReloadsChangedEntryAndKeepsBrokenEdits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plugins.yaml")
	write := func(s string) { require.NoError(t, os.WriteFile(path, []byte(s), 0o644)) }
	write("plugins:\n  - { id: a, name: test/walker, config: { root: one } }\n  - { id: b, name: test/plain }\n")
	f, err := config.Load(path)
	require.NoError(t, err)
	root := bus.New()
	defer root.Dispose()
	comp, err := config.Apply(root.Context(), f)
	require.NoError(t, err)
	a, b := comp.Fiber("a"), comp.Fiber("b")

	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan config.ReloadResult, 8)
	done := make(chan error, 1)
	go func() {
		done <- config.Watch(ctx, path, comp, 20*time.Millisecond, func(r config.ReloadResult) { results <- r })
	}()
	defer func() { cancel(); require.NoError(t, <-done) }()

	next := func() config.ReloadResult {
		select {
		case r := <-results:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no reload reported")
			return config.ReloadResult{}
		}
	}
	// Give the watcher a moment to start before the first edit.
	require.Eventually(t, func() bool {
		write("plugins:\n  - { id: a, name: test/walker, config: { root: two } }\n  - { id: b, name: test/plain }\n")
		select {
		case r := <-results:
			results <- r
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}, 10*time.Second, 10*time.Millisecond)
	r := next()
	require.NoError(t, r.Err)
	assert.Equal(t, []string{"a"}, r.Changes.Updated)
	assert.Same(t, a, comp.Fiber("a"))
	assert.Same(t, b, comp.Fiber("b"))
	assert.Equal(t, "two", a.Config().(*testConfig).Root)

	for len(results) > 0 {
		<-results
	}
	write("plugins:\n  - { id: a, name: test/walker, config: { rot: three } }\n")
	r = next()
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), `plugins.yaml:2:43: unknown key "rot" (did you mean "root"?)`)
	assert.Equal(t, bus.StateActive, b.State(), "a broken edit keeps the running composition")
	assert.Equal(t, "two", a.Config().(*testConfig).Root)
}
