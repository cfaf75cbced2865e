package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/config"
)

func TestLoadOnlyKeepsTheSelectedEntries(t *testing.T) {
	walker := func(name string) bool { return name == "test/walker" }
	for _, tt := range []struct {
		name string
		yaml string
		want map[string]bool // entry id → enabled
		err  string
	}{
		{
			name: "an unset variable and a failed validation elsewhere are tolerated",
			yaml: "plugins:\n  - { name: test/walker, config: { root: . } }\n  - { name: test/free, config: { config: { key: \"${UNSET_KEY}\" } } }\n  - { id: bad, name: test/walker, disabled: true, config: { root: x, depth: -1 } }\n",
			want: map[string]bool{"test/walker": true, "test/free": false, "bad": false},
		},
		{
			name: "groups keep what they hold",
			yaml: "plugins:\n  - name: group\n    config:\n      - { name: test/walker, config: { root: . } }\n      - { name: test/free, config: { config: { key: \"${UNSET_KEY}\" } } }\n",
			want: map[string]bool{"group": true, "test/walker": true, "test/free": false},
		},
		{
			name: "a broken selected entry is an error",
			yaml: "plugins:\n  - { name: test/walker, config: { root: \"${UNSET_ROOT}\" } }\n  - { name: test/plain }\n",
			err:  "plugins.yaml:2:42: environment variable UNSET_ROOT is not set",
		},
		{
			name: "a selected entry is validated",
			yaml: "plugins:\n  - { name: test/walker, config: { root: ., depth: -1 } }\n",
			err:  "plugins.yaml:2:34: test/walker: depth must not be negative, got -1",
		},
		{
			name: "what is not a variable problem is still an error elsewhere",
			yaml: "plugins:\n  - { name: test/walker, config: { root: . } }\n  - { name: test/free, config: { confg: {} } }\n",
			err:  `plugins.yaml:3:34: unknown key "confg" (did you mean "config"?)`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "plugins.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tt.yaml), 0o644))
			f, err := config.LoadOnly(path, walker)
			if tt.err != "" {
				require.Error(t, err)
				assert.Equal(t, filepath.Join(dir, tt.err), err.Error())
				return
			}
			require.NoError(t, err)
			got := map[string]bool{}
			var walk func([]config.Entry)
			walk = func(es []config.Entry) {
				for _, e := range es {
					got[e.ID] = !e.Disabled
					if children, ok := e.Config.([]config.Entry); ok {
						walk(children)
					}
				}
			}
			walk(f.Entries)
			assert.Equal(t, tt.want, got)
			_, err = config.Load(path)
			assert.Error(t, err, "Load refuses what LoadOnly tolerates")
		})
	}
}
