//go:build unix

package external_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/external"
)

func TestPluginsYAMLEntry(t *testing.T) {
	yaml := `plugins:
  - id: units
    name: external
    config:
      path: ` + bins["units"] + `
      timeout: 3s
      env: [HOME]
      config: { precision: 3 }
  - id: policy
    name: external
    config:
      path: ` + bins["policy"] + `
      config:
        rules:
          - { tool: "^convert$", arguments: "ly", reason: "no astronomy" }
`
	f, err := config.Parse("plugins.yaml", []byte(yaml), os.LookupEnv)
	require.NoError(t, err)
	cfg, ok := f.Entries[0].Config.(*external.Config)
	require.True(t, ok, "%T", f.Entries[0].Config)
	assert.Equal(t, 3*time.Second, cfg.Timeout)
	assert.Equal(t, map[string]any{"precision": 3}, cfg.Config)

	h := newHost(t)
	comp, err := config.Apply(h.c, f)
	require.NoError(t, err)
	t.Cleanup(func() { _ = comp.Fiber("units").Dispose() })
	assert.Equal(t, "6.21 mi", h.call("convert", `{"value":10,"from":"km","to":"mi"}`))
	require.NotNil(t, comp.Fiber("policy"))
}

func TestPluginsYAMLRejectsUnknownKeys(t *testing.T) {
	_, err := config.Parse("plugins.yaml", []byte("plugins:\n  - name: external\n    config: { path: x, sha: abc }\n"), os.LookupEnv)
	require.ErrorContains(t, err, `plugins.yaml:3:24: unknown key "sha"`)
}
