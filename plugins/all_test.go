package plugins_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	_ "github.com/vigil-run/vigil/plugins"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

func TestEveryBuiltinPluginIsRegistered(t *testing.T) {
	for _, name := range []string{
		"agent", "invariants", "compaction",
		"provider/scripted", "provider/replay", "provider/openai", "provider/anthropic",
		"tools/fs", "tools/calc", "tools/a2a",
		"store/jsonl", "store/memory",
		"telemetry/otel",
	} {
		m, ok := bus.LookupModule(name)
		if !assert.True(t, ok, name) {
			continue
		}
		assert.NotEmpty(t, m.Description, name)
		require.NotNil(t, m.New(), name)
		assert.Equal(t, name, m.New().Name(), name)
		if m.Config != nil {
			assert.NotNil(t, m.Config(), name)
		}
	}
}

// TestEveryPluginSitsAtItsName: the tree is the index. Every registered
// plugin's package is plugins/<its name>, but for the three that live in
// the core package they name.
func TestEveryPluginSitsAtItsName(t *testing.T) {
	const module = "github.com/vigil-run/vigil/"
	core := map[string]string{
		"agent":      module + "agentloop",
		"invariants": module + "invariants",
		"group":      module + "config",
	}
	ms := bus.Modules()
	require.NotEmpty(t, ms)
	for _, m := range ms {
		want, ok := core[m.Name]
		if !ok {
			want = module + "plugins/" + m.Name
		}
		assert.Equal(t, want, m.Package, m.Name)
	}
}

// apply applies the module called name with its zero config, changed by
// set.
func apply(t *testing.T, c *bus.Context, name string, set func(cfg any)) {
	t.Helper()
	m, ok := bus.LookupModule(name)
	require.True(t, ok, name)
	var cfg any
	if m.Config != nil {
		cfg = m.Config()
		if set != nil {
			set(cfg)
		}
	}
	_, err := c.Plugin(m.New(), cfg)
	require.NoError(t, err, name)
}

func TestDefaultCompositionRunsATurnOffline(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi"), 0o644))
	root := bus.New()
	defer root.Dispose()
	c := root.Context()
	// The order of plugins.yaml; the agent waits for what it needs.
	apply(t, c, "store/memory", nil)
	apply(t, c, "provider/scripted", nil)
	apply(t, c, "agent", func(cfg any) {
		cfg.(*agentloop.Config).System = "You are a careful assistant."
	})
	apply(t, c, "tools/fs", func(cfg any) {
		cfg.(*fstools.Config).Root = dir
	})
	apply(t, c, "invariants", nil)

	mgr, err := live.Sessions.Get(c)
	require.NoError(t, err)
	a, err := agentloop.AgentService.Get(c)
	require.NoError(t, err)
	sess, err := mgr.Create(context.Background())
	require.NoError(t, err)
	res, err := a.Run(context.Background(), sess, "what is here?")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.True(t, strings.Contains(res.Content, "hello.txt"), res.Content)
}
