package mcp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/tools/mcp"
)

// loaded is the tools/mcp config of a plugins.yaml in dir whose entry
// ends with the given extra config lines.
func loaded(t *testing.T, dir, extra string) *mcp.Config {
	t.Helper()
	yaml := fmt.Sprintf("plugins:\n  - name: tools/mcp\n    config:\n      command: %q\n      prefix: srv_\n%s", serverBin, extra)
	p := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(p, []byte(yaml), 0o644))
	f, err := config.Load(p)
	require.NoError(t, err)
	return f.Entries[0].Config.(*mcp.Config)
}

// The client advertises roots only when it has some: by default the
// folder of plugins.yaml; roots: [] or a composition built in Go without
// roots advertise none.
func TestRootsAreAdvertisedOnlyWhenThereAreSome(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	for _, tc := range []struct {
		name  string
		cfg   func() *mcp.Config
		roots []string
	}{
		{"default: the file's folder", func() *mcp.Config { return loaded(t, dir, "") }, []string{"file://" + filepath.ToSlash(dir)}},
		{"given", func() *mcp.Config { return loaded(t, dir, "      roots: [a, "+other+"]\n") },
			[]string{"file://" + filepath.ToSlash(filepath.Join(dir, "a")), "file://" + filepath.ToSlash(other)}},
		{"none", func() *mcp.Config { return loaded(t, dir, "      roots: []\n") }, nil},
		{"built in Go", func() *mcp.Config { return stdio("srv_", "") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg()
			roots, err := mcp.RootsOf(cfg)
			require.NoError(t, err)
			assert.Equal(t, tc.roots, roots)
			h := newHost(t)
			h.mcp(cfg)
			got, err := h.call("srv_roots", "{}")
			require.NoError(t, err)
			want := "no roots capability"
			if len(tc.roots) > 0 {
				want = "roots capability"
			}
			assert.Equal(t, want, strings.TrimSpace(got))
		})
	}
}
