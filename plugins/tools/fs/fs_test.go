package fstools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
)

// workspace builds root/{a.txt, sub/b.txt, link-out -> outside, link-in -> sub}
// next to a directory outside the root holding a secret.
func workspace(t testing.TB) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sub", "b.txt"), []byte("beta"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "outside-only.txt"), []byte("TOPSECRET"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "link-out")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "secret-link")))
	require.NoError(t, os.Symlink("sub", filepath.Join(root, "link-in")))
	return root, outside
}

func tools(t *testing.T, root string, maxBytes int) map[string]agentloop.Tool {
	t.Helper()
	f, err := fstools.Open(root, maxBytes)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	out := map[string]agentloop.Tool{}
	for _, tl := range f.Tools() {
		out[tl.Spec().Name] = tl
	}
	return out
}

func TestToolsReadInsideRoot(t *testing.T) {
	root, _ := workspace(t)
	ts := tools(t, root, 0)
	cases := []struct {
		tool, path, want string
	}{
		{"list_dir", ".", "a.txt\nlink-in\nlink-out\nsecret-link\nsub/"},
		{"list_dir", "", "a.txt\nlink-in\nlink-out\nsecret-link\nsub/"},
		{"list_dir", "sub", "b.txt"},
		{"list_dir", "sub/../sub", "b.txt"},
		{"list_dir", "link-in", "b.txt"},
		{"read_file", "a.txt", "alpha\n"},
		{"read_file", "sub/b.txt", "beta"},
		{"read_file", "link-in/b.txt", "beta"},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+tc.path, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"path": tc.path})
			got, err := ts[tc.tool].Execute(context.Background(), args)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestToolsRefuseEscapes(t *testing.T) {
	root, outside := workspace(t)
	ts := tools(t, root, 0)
	cases := []struct {
		name, tool, path, code string
	}{
		{"parent", "list_dir", "..", fstools.CodeEscape},
		{"parent file", "read_file", "../outside/secret.txt", fstools.CodeEscape},
		{"nested parent", "read_file", "sub/../../outside/secret.txt", fstools.CodeEscape},
		{"absolute", "read_file", filepath.Join(outside, "secret.txt"), fstools.CodeEscape},
		{"absolute root", "list_dir", "/", fstools.CodeEscape},
		{"symlink dir out", "list_dir", "link-out", fstools.CodeEscape},
		{"through symlink out", "read_file", "link-out/secret.txt", fstools.CodeEscape},
		{"symlink file out", "read_file", "secret-link", fstools.CodeEscape},
		{"missing", "read_file", "nope.txt", fstools.CodeNotFound},
		{"directory", "read_file", "sub", fstools.CodeIO},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"path": tc.path})
			got, err := ts[tc.tool].Execute(context.Background(), args)
			require.Error(t, err)
			assert.Empty(t, got)
			var te *agentloop.ToolError
			require.True(t, errors.As(err, &te), "want a *ToolError, got %T %v", err, err)
			assert.Equal(t, tc.code, te.Code, te.Message)
			assert.NotContains(t, te.Message, "secret\n")
		})
	}
}

func TestToolsRejectBadArguments(t *testing.T) {
	root, _ := workspace(t)
	ts := tools(t, root, 0)
	for _, args := range []string{`{"path": 3}`, `{"file":"a.txt"}`, `[]`} {
		_, err := ts["read_file"].Execute(context.Background(), json.RawMessage(args))
		var te *agentloop.ToolError
		require.ErrorAs(t, err, &te, args)
		assert.Equal(t, fstools.CodeBadArguments, te.Code)
	}
}

func TestReadFileTruncatesAtMaxBytes(t *testing.T) {
	root, _ := workspace(t)
	ts := tools(t, root, 3)
	got, err := ts["read_file"].Execute(context.Background(), json.RawMessage(`{"path":"a.txt"}`))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(got, "alp\n[truncated: file is 6 bytes"), got)
}

func TestToolSpecsAreValidJSONSchema(t *testing.T) {
	root, _ := workspace(t)
	for name, tl := range tools(t, root, 0) {
		spec := tl.Spec()
		assert.Equal(t, name, spec.Name)
		assert.NotEmpty(t, spec.Description)
		var schema map[string]any
		require.NoError(t, json.Unmarshal(spec.Parameters, &schema))
		assert.Equal(t, "object", schema["type"])
	}
}

// FuzzToolsStayInsideRoot: whatever path the model sends, nothing from
// outside the root comes back.
func FuzzToolsStayInsideRoot(f *testing.F) {
	for _, s := range []string{".", "..", "../outside/secret.txt", "/etc/passwd", "link-out/secret.txt", "secret-link", "sub/../../outside", "a.txt\x00", `..\outside`, "sub/./../link-out"} {
		f.Add(s)
	}
	root, _ := workspace(f)
	fs, err := fstools.Open(root, 0)
	if err != nil {
		f.Fatal(err)
	}
	defer fs.Close()
	ts := fs.Tools()
	f.Fuzz(func(t *testing.T, p string) {
		args, _ := json.Marshal(map[string]string{"path": p})
		for _, tl := range ts {
			got, _ := tl.Execute(context.Background(), args)
			if strings.Contains(got, "outside-only") || strings.Contains(got, "TOPSECRET") || got == "secret" {
				t.Fatalf("%s(%q) read outside the root: %q", tl.Spec().Name, p, got)
			}
		}
	})
}

// TestReadFileTruncatesOnACharacterBoundary: a limit that falls inside a
// UTF-8 character cuts before it; bytes that are not UTF-8 are cut where
// the limit says. (Records make any bytes valid UTF-8; see the root
// package's TestBytesThatAreNotUTF8DoNotBrickASession for a session
// reading and listing such files.)
func TestReadFileTruncatesOnACharacterBoundary(t *testing.T) {
	cases := []struct {
		name, content string
		max           int
		shown         string
	}{
		{"inside a 3-byte character", "snow☃☃", 8, "snow☃"},
		{"right after one", "snow☃☃", 7, "snow☃"},
		{"after its first byte", "snow☃☃", 5, "snow"},
		{"inside a 4-byte character", "a😀b", 3, "a"},
		{"inside a 2-byte character", "café!", 4, "caf"},
		{"Latin-1", "caf\xe9 cr\xe8me", 4, "caf\xe9"},
		{"a character the file ends inside", "ab\xe2\x98", 3, "ab\xe2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(root, "f"), []byte(c.content), 0o644))
			got, err := tools(t, root, c.max)["read_file"].Execute(context.Background(), json.RawMessage(`{"path":"f"}`))
			require.NoError(t, err)
			want := fmt.Sprintf("%s\n[truncated: file is %d bytes, showing the first %d]", c.shown, len(c.content), len(c.shown))
			assert.Equal(t, want, got)
		})
	}
}
