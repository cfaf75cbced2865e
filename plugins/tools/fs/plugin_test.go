package fstools_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
)

func TestPluginProvidesToolServicesUntilDisposed(t *testing.T) {
	root, _ := workspace(t)
	r := bus.New()
	defer r.Dispose()
	m, ok := bus.LookupModule(fstools.Name)
	require.True(t, ok)
	cfg := m.Config().(*fstools.Config)
	cfg.Root = root
	f, err := r.Context().Plugin(m.New(), cfg)
	require.NoError(t, err)

	got, err := bus.Lookup[agentloop.Tool](r.Context(), agentloop.ToolServicePrefix)
	require.NoError(t, err)
	var names []string
	for _, n := range got {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{"tool/list_dir", "tool/read_file"}, names)

	require.NoError(t, f.Dispose())
	got, err = bus.Lookup[agentloop.Tool](r.Context(), agentloop.ToolServicePrefix)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestPluginFailsOnMissingRoot(t *testing.T) {
	r := bus.New()
	defer r.Dispose()
	f, err := r.Context().Plugin(fstools.Plugin, &fstools.Config{Root: t.TempDir() + "/missing"})
	require.Error(t, err)
	assert.Equal(t, bus.StateFailed, f.State())
}
