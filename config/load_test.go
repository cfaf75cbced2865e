package config_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/load/*.txtar")

type testConfig struct {
	Root    string        `yaml:"root" vigil:"required"`
	Depth   int           `yaml:"depth"`
	Ratio   float64       `yaml:"ratio"`
	Verbose bool          `yaml:"verbose"`
	Timeout time.Duration `yaml:"timeout"`
	Tags    []string      `yaml:"tags"`
	Nested  struct {
		Mode string `yaml:"mode" enum:"fast,slow"`
	} `yaml:"nested"`
}

// freeConfig has a free-form map, decoded into plain Go values.
type freeConfig struct {
	Config map[string]any `yaml:"config"`
}

func (c *testConfig) Validate() error {
	if c.Depth < 0 {
		return fmt.Errorf("depth must not be negative, got %d", c.Depth)
	}
	return nil
}

func init() {
	bus.Register(bus.Module{
		Name:        "test/walker",
		Description: "a test plugin with a typed config",
		Config:      func() any { return &testConfig{} },
		New: func() bus.Plugin {
			return bus.PluginFunc("test/walker", func(*bus.Context, *testConfig) error { return nil })
		},
	})
	bus.Register(bus.Module{
		Name:        "test/free",
		Description: "a test plugin with a free-form map, like external's config",
		Config:      func() any { return &freeConfig{} },
		New: func() bus.Plugin {
			return bus.PluginFunc("test/free", func(*bus.Context, *freeConfig) error { return nil })
		},
	})
	bus.Register(bus.Module{
		Name:        "test/plain",
		Description: "a test plugin without config",
		New:         func() bus.Plugin { return bus.PluginFunc("test/plain", func(*bus.Context, any) error { return nil }) },
	})
}

// TestLoadCases runs every testdata/load/*.txtar: the plugins.yaml section
// is parsed with the variables of the env section; want holds the exact
// error, or a summary of the entries when it loads.
func TestLoadCases(t *testing.T) {
	files, err := filepath.Glob("testdata/load/*.txtar")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			require.NoError(t, err)
			sections := map[string][]byte{}
			for _, f := range ar.Files {
				sections[f.Name] = f.Data
			}
			env := map[string]string{}
			sc := bufio.NewScanner(strings.NewReader(string(sections["env"])))
			for sc.Scan() {
				if k, v, ok := strings.Cut(sc.Text(), "="); ok {
					env[k] = v
				}
			}
			f, err := config.Parse("plugins.yaml", sections["plugins.yaml"], func(k string) (string, bool) {
				v, ok := env[k]
				return v, ok
			})
			got := summarize(f, err)
			if *update {
				for i := range ar.Files {
					if ar.Files[i].Name == "want" {
						ar.Files[i].Data = []byte(got)
					}
				}
				require.NoError(t, os.WriteFile(file, txtar.Format(ar), 0o644))
				return
			}
			assert.Equal(t, string(sections["want"]), got)
		})
	}
}

func summarize(f *config.File, err error) string {
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b strings.Builder
	var walk func(es []config.Entry, indent string)
	walk = func(es []config.Entry, indent string) {
		for _, e := range es {
			fmt.Fprintf(&b, "%s%s id=%s disabled=%t at %d:%d", indent, e.Name, e.ID, e.Disabled, e.Line, e.Col)
			if children, ok := e.Config.([]config.Entry); ok {
				b.WriteString("\n")
				walk(children, indent+"  ")
				continue
			}
			if e.Config != nil {
				fmt.Fprintf(&b, " config=%+v", e.Config)
			}
			b.WriteString("\n")
		}
	}
	walk(f.Entries, "")
	return b.String()
}

// Each problem of a file with several stays what callers branch on.
func TestEveryProblemIsSeenByErrorsIsAndAs(t *testing.T) {
	_, err := config.Parse("plugins.yaml", []byte("plugins:\n  - name: test/walkr\n  - name: test/walker\n    config: {root: ., depth: x}\n"), nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, config.ErrUnknownPlugin)
	assert.ErrorIs(t, err, config.ErrType)
	var es config.Errors
	require.ErrorAs(t, err, &es)
	require.Len(t, es, 2)
	assert.Equal(t, 2, es[0].Line)
	assert.Equal(t, 4, es[1].Line)
}
