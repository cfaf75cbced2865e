package plugins_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/plugins/store/jsonl"
	pgplugin "github.com/vigil-run/vigil/plugins/store/postgres"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
	"github.com/vigil-run/vigil/plugins/tools/mcp"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// pathFields lists, as "plugin.key", the config fields of every
// registered plugin tagged `vigil:"path"`, nested structs included.
func pathFields() []string {
	var out []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if slices.Contains(strings.Split(f.Tag.Get("vigil"), ","), "path") {
				out = append(out, prefix+"."+key)
			}
			walk(prefix+"."+key, f.Type)
		}
	}
	for _, m := range bus.Modules() {
		if m.Config != nil && m.Name != config.GroupName {
			walk(m.Name, reflect.TypeOf(m.Config()))
		}
	}
	slices.Sort(out)
	return out
}

// TestEveryPathFieldResolvesAgainstTheFile: the fields that name files
// are exactly these, and each, written relative in a plugins.yaml, is
// loaded relative to the file's directory, while commands and arguments
// stay as written.
func TestEveryPathFieldResolvesAgainstTheFile(t *testing.T) {
	cases := []struct {
		field  string // plugin.key
		config string
		check  func(t *testing.T, dir string, cfg any)
	}{
		{"external.path", "{ path: bin/plugin, args: [--dir, ./x] }", func(t *testing.T, dir string, cfg any) {
			c := cfg.(*external.Config)
			assert.Equal(t, filepath.Join(dir, "bin", "plugin"), c.Path)
			assert.Equal(t, []string{"--dir", "./x"}, c.Args, "args are opaque")
		}},
		{"provider/replay.file", "{ file: logs/a.jsonl }", func(t *testing.T, dir string, cfg any) {
			assert.Equal(t, filepath.Join(dir, "logs", "a.jsonl"), cfg.(*replay.Config).File)
		}},
		{"store/jsonl.dir", "{ dir: .vigil/sessions }", func(t *testing.T, dir string, cfg any) {
			assert.Equal(t, filepath.Join(dir, ".vigil", "sessions"), cfg.(*jsonl.Config).Dir)
		}},
		{"store/jsonl.signing.key_file", "{ signing: { key_file: keys/signing.key } }", func(t *testing.T, dir string, cfg any) {
			assert.Equal(t, filepath.Join(dir, "keys", "signing.key"), cfg.(*jsonl.Config).Signing.KeyFile)
		}},
		{"store/postgres.signing.key_file", "{ dsn: postgres://localhost/x, signing: { key_file: keys/signing.key } }", func(t *testing.T, dir string, cfg any) {
			assert.Equal(t, filepath.Join(dir, "keys", "signing.key"), cfg.(*pgplugin.Config).Signing.KeyFile)
		}},
		{"tools/fs.root", "{ root: . }", func(t *testing.T, dir string, cfg any) {
			assert.Equal(t, dir, cfg.(*fstools.Config).Root)
		}},
		{"tools/mcp.dir", "{ command: ./server, args: [serve, ./data], dir: srv }", func(t *testing.T, dir string, cfg any) {
			c := cfg.(*mcp.Config)
			assert.Equal(t, filepath.Join(dir, "srv"), c.Dir)
			assert.Equal(t, "./server", c.Command, "the command is opaque")
			assert.Equal(t, []string{"serve", "./data"}, c.Args, "args are opaque")
		}},
		{"tools/mcp.roots", "{ command: ./server, roots: [., data] }", func(t *testing.T, dir string, cfg any) {
			assert.Equal(t, []string{dir, filepath.Join(dir, "data")}, cfg.(*mcp.Config).Roots)
		}},
	}
	var want []string
	for _, tc := range cases {
		want = append(want, tc.field)
	}
	require.Equal(t, want, pathFields(), "a new path field needs a case here")

	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			name, _, _ := strings.Cut(tc.field, ".")
			dir := t.TempDir()
			if strings.Contains(tc.field, ".signing.") {
				writeSigningKey(t, dir) // the key file is read as the config is checked
			}
			path := filepath.Join(dir, "plugins.yaml")
			require.NoError(t, os.WriteFile(path, []byte("plugins:\n  - name: "+name+"\n    config: "+tc.config+"\n"), 0o644))
			f, err := config.Load(path)
			require.NoError(t, err)
			require.Len(t, f.Entries, 1)
			tc.check(t, dir, f.Entries[0].Config)
		})
	}
}

// writeSigningKey writes a checkpoint signing key at keys/signing.key in
// dir, as `vigil keys generate` does.
func writeSigningKey(t *testing.T, dir string) {
	skey, _, err := note.GenerateKey(rand.Reader, "paths-test")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "keys"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keys", "signing.key"), []byte(skey+"\n"), 0o600))
}

// TestRelativeSessionDirLandsBesideTheFile runs a turn of a composition
// whose plugins.yaml sits in another directory than the working one:
// the session log is written under the file's directory, and tools/fs
// lists the file's directory.
func TestRelativeSessionDirLandsBesideTheFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "beside.txt"), []byte("hi"), 0o644))
	path := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`plugins:
  - name: store/jsonl
    config: { dir: state/sessions }
  - name: provider/scripted
  - name: agent
  - name: tools/fs
    config: { root: . }
  - name: invariants
`), 0o644))
	// Another working directory, so that a regression writes there
	// rather than into the tree.
	wd := t.TempDir()
	t.Chdir(wd)

	f, err := config.Load(path)
	require.NoError(t, err)
	root := bus.New()
	defer root.Dispose()
	comp, err := config.Apply(root.Context(), f)
	require.NoError(t, err)
	defer comp.Dispose()
	mgr, err := live.Sessions.Get(root.Context())
	require.NoError(t, err)
	a, err := agentloop.AgentService.Get(root.Context())
	require.NoError(t, err)
	sess, err := mgr.Create(context.Background())
	require.NoError(t, err)
	res, err := a.Run(context.Background(), sess, "what is here?")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Contains(t, res.Content, "beside.txt", "tools/fs lists the file's directory")
	require.NoError(t, sess.Close(context.Background()))

	assert.FileExists(t, filepath.Join(dir, "state", "sessions", sess.ID()+".jsonl"))
	entries, err := os.ReadDir(wd)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing is written under the working directory")
}
