package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
)

// pathsConfig has path fields of every supported shape, beside strings
// that are not paths.
type pathsConfig struct {
	Dir    string   `yaml:"dir" vigil:"path"`
	Files  []string `yaml:"files" vigil:"path"`
	Opt    *string  `yaml:"opt" vigil:"path"`
	Name   string   `yaml:"name"`
	Args   []string `yaml:"args"`
	Nested struct {
		Dir  string `yaml:"dir" vigil:"required,path"`
		Word string `yaml:"word"`
	} `yaml:"nested"`
}

// badPathConfig marks a field that holds no string as a path.
type badPathConfig struct {
	Depth int `yaml:"depth" vigil:"path"`
}

func init() {
	bus.Register(bus.Module{
		Name:        "test/paths",
		Description: "a test plugin with path fields",
		Config:      func() any { return &pathsConfig{} },
		New: func() bus.Plugin {
			return bus.PluginFunc("test/paths", func(*bus.Context, *pathsConfig) error { return nil })
		},
	})
	bus.Register(bus.Module{
		Name:        "test/badpath",
		Description: "a test plugin that marks an int as a path",
		Config:      func() any { return &badPathConfig{} },
		New: func() bus.Plugin {
			return bus.PluginFunc("test/badpath", func(*bus.Context, *badPathConfig) error { return nil })
		},
	})
}

// pathsOf loads yaml (one test/paths entry, possibly in a group) as the
// file plugins.yaml in dir, and returns the entry's config.
func pathsOf(t *testing.T, f *config.File) *pathsConfig {
	t.Helper()
	require.Len(t, f.Entries, 1)
	e := f.Entries[0]
	if children, ok := e.Config.([]config.Entry); ok {
		require.Len(t, children, 1)
		e = children[0]
	}
	cfg, ok := e.Config.(*pathsConfig)
	require.True(t, ok, "config is %T", e.Config)
	return cfg
}

// TestLoadResolvesPathFieldsAgainstTheFilesDirectory loads a plugins.yaml
// from a temporary directory while the working directory is the
// package's: relative values of path fields land beside the file.
func TestLoadResolvesPathFieldsAgainstTheFilesDirectory(t *testing.T) {
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	t.Setenv("SUBDIR", "from-env")
	for _, tt := range []struct {
		name   string
		config string
		check  func(t *testing.T, dir string, c *pathsConfig)
	}{
		{
			name:   "a relative path joins the file's directory",
			config: "{ dir: data/sessions, nested: { dir: . } }",
			check: func(t *testing.T, dir string, c *pathsConfig) {
				assert.Equal(t, filepath.Join(dir, "data", "sessions"), c.Dir)
				assert.Equal(t, dir, c.Nested.Dir, "nested struct fields are resolved too")
			},
		},
		{
			name:   "dot-dot is cleaned",
			config: "{ dir: ../elsewhere/./x, nested: { dir: a } }",
			check: func(t *testing.T, dir string, c *pathsConfig) {
				assert.Equal(t, filepath.Join(filepath.Dir(dir), "elsewhere", "x"), c.Dir)
			},
		},
		{
			name:   "an absolute path is kept",
			config: "{ dir: /var/lib/vigil, nested: { dir: /x } }",
			check: func(t *testing.T, dir string, c *pathsConfig) {
				assert.Equal(t, "/var/lib/vigil", c.Dir)
				assert.Equal(t, "/x", c.Nested.Dir)
			},
		},
		{
			name:   "an empty path is kept empty, so the plugin's default applies",
			config: "{ dir: '', nested: { dir: '' } }",
			check: func(t *testing.T, dir string, c *pathsConfig) {
				assert.Empty(t, c.Dir)
				assert.Empty(t, c.Nested.Dir)
				assert.Nil(t, c.Opt)
			},
		},
		{
			// A bare ~ is YAML's null: it takes quotes to be a path.
			name:   "~ is the home directory",
			config: "{ dir: ~/sessions, files: ['~'], nested: { dir: \"~\" } }",
			check: func(t *testing.T, dir string, c *pathsConfig) {
				assert.Equal(t, filepath.Join(home, "sessions"), c.Dir)
				assert.Equal(t, []string{home}, c.Files)
				assert.Equal(t, home, c.Nested.Dir)
			},
		},
		{
			name:   "every element of a list and a pointer are resolved",
			config: "{ files: [a.txt, /abs.txt, ''], opt: o, nested: { dir: n } }",
			check: func(t *testing.T, dir string, c *pathsConfig) {
				assert.Equal(t, []string{filepath.Join(dir, "a.txt"), "/abs.txt", ""}, c.Files)
				require.NotNil(t, c.Opt)
				assert.Equal(t, filepath.Join(dir, "o"), *c.Opt)
			},
		},
		{
			name:   "fields not marked as paths are opaque",
			config: "{ name: rel/name, args: [--root, ., ./x], nested: { dir: n, word: w/x } }",
			check: func(t *testing.T, dir string, c *pathsConfig) {
				assert.Equal(t, "rel/name", c.Name)
				assert.Equal(t, []string{"--root", ".", "./x"}, c.Args)
				assert.Equal(t, "w/x", c.Nested.Word)
			},
		},
		{
			name:   "a variable is expanded before the path is resolved",
			config: "{ dir: '${SUBDIR}/x', nested: { dir: '${HOME}' } }",
			check: func(t *testing.T, dir string, c *pathsConfig) {
				assert.Equal(t, filepath.Join(dir, "from-env", "x"), c.Dir)
				assert.Equal(t, os.Getenv("HOME"), c.Nested.Dir)
			},
		},
		{
			name:   "aliases resolve like the values they stand for",
			config: "{ dir: &d rel, files: [*d], nested: { dir: *d } }",
			check: func(t *testing.T, dir string, c *pathsConfig) {
				assert.Equal(t, filepath.Join(dir, "rel"), c.Dir)
				assert.Equal(t, []string{filepath.Join(dir, "rel")}, c.Files)
				assert.Equal(t, filepath.Join(dir, "rel"), c.Nested.Dir)
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, layout := range []struct {
				name string
				yaml string
			}{
				{"top level", "plugins:\n  - name: test/paths\n    config: " + tt.config + "\n"},
				{"in a group", "plugins:\n  - name: group\n    config:\n      - name: test/paths\n        config: " + tt.config + "\n"},
			} {
				t.Run(layout.name, func(t *testing.T) {
					dir := t.TempDir()
					path := filepath.Join(dir, "plugins.yaml")
					require.NoError(t, os.WriteFile(path, []byte(layout.yaml), 0o644))
					f, err := config.Load(path)
					require.NoError(t, err)
					tt.check(t, dir, pathsOf(t, f))
					only, err := config.LoadOnly(path, func(string) bool { return true })
					require.NoError(t, err)
					tt.check(t, dir, pathsOf(t, only))
				})
			}
		})
	}
}

// TestLoadResolvesAgainstAnAbsoluteDirectory: a file named by a relative
// path resolves to absolute paths, so that they stay right whatever the
// working directory is when a plugin uses them.
func TestLoadResolvesAgainstAnAbsoluteDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(path, []byte("plugins:\n  - { name: test/paths, config: { dir: s, nested: { dir: . } } }\n"), 0o644))
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, path)
	require.NoError(t, err)
	require.False(t, filepath.IsAbs(rel))
	f, err := config.Load(rel)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "s"), pathsOf(t, f).Dir)
}

func TestParseKeepsRelativePathsAsWritten(t *testing.T) {
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	f, err := config.Parse("plugins.yaml", []byte("plugins:\n  - { name: test/paths, config: { dir: data, files: [~/x], nested: { dir: . } } }\n"), nil)
	require.NoError(t, err)
	c := pathsOf(t, f)
	assert.Equal(t, "data", c.Dir, "data has no directory to resolve against")
	assert.Equal(t, ".", c.Nested.Dir)
	assert.Equal(t, []string{filepath.Join(home, "x")}, c.Files, "~ is expanded all the same")
}

// TestApplyKeepsThePathsOfGoValues: a composition built from Go values
// has no file, and its paths reach the plugin as given.
func TestApplyKeepsThePathsOfGoValues(t *testing.T) {
	root := bus.New()
	defer root.Dispose()
	cfg := &pathsConfig{Dir: "rel", Files: []string{"~/x"}}
	_, err := config.Apply(root.Context(), &config.File{Entries: []config.Entry{{ID: "p", Name: "test/paths", Config: cfg}}})
	require.NoError(t, err)
	assert.Equal(t, &pathsConfig{Dir: "rel", Files: []string{"~/x"}}, cfg)
}

func TestPathFieldErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		yaml string
		err  string
		is   error
	}{
		{
			name: "~user is refused, not taken as a folder",
			yaml: "plugins:\n  - { name: test/paths, config: { dir: ~bob/x, nested: { dir: . } } }\n",
			err:  `plugins.yaml:2:40: cannot use "~bob/x" as a path: only ~ and ~/ (your home directory) are expanded, write ~user's path out`,
			is:   config.ErrInvalid,
		},
		{
			name: "also in a disabled entry",
			yaml: "plugins:\n  - { name: test/paths, disabled: true, config: { files: [~bob], nested: { dir: . } } }\n",
			err:  `plugins.yaml:2:59: cannot use "~bob" as a path: only ~ and ~/ (your home directory) are expanded, write ~user's path out`,
			is:   config.ErrInvalid,
		},
		{
			name: "a path tag on a field that holds no string",
			yaml: "plugins:\n  - { name: test/badpath, config: { depth: 3 } }\n",
			err:  `plugins.yaml:2:37: key "depth" is marked as a path but int holds no string`,
			is:   config.ErrType,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "plugins.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tt.yaml), 0o644))
			_, err := config.Load(path)
			require.Error(t, err)
			assert.Equal(t, filepath.Join(dir, tt.err), err.Error())
			assert.ErrorIs(t, err, tt.is)
		})
	}
}

func TestSchemaDescribesPathFields(t *testing.T) {
	s, err := config.Schema()
	require.NoError(t, err)
	assert.Contains(t, string(s), "(a path: relative to the directory of plugins.yaml; ~ is your home)")
}
