package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/config"
)

// bomb returns a plugins.yaml whose free-form map holds levels of nested
// aliases, each level a list of width aliases to the level before: the
// last level expands to about width^levels nodes.
func bomb(levels, width int) string {
	var b strings.Builder
	b.WriteString("plugins:\n  - name: test/free\n    config:\n      config:\n")
	fmt.Fprintf(&b, "        l0: &l0 %q\n", "lol")
	for i := 1; i <= levels; i++ {
		refs := make([]string, width)
		for j := range refs {
			refs[j] = fmt.Sprintf("*l%d", i-1)
		}
		fmt.Fprintf(&b, "        l%d: &l%d [%s]\n", i, i, strings.Join(refs, ", "))
	}
	return b.String()
}

func TestAliasExpansionIsBounded(t *testing.T) {
	for _, tt := range []struct {
		name string
		yaml string
		want string
	}{
		{
			// 10 + 110 + 1110 + 11110 nodes: small enough to decode
			// without the bound, over it with.
			name: "moderate bomb",
			yaml: bomb(4, 10),
			want: "plugins.yaml:9:53: aliases expand to more than 10000 YAML nodes (an alias bomb?)",
		},
		{
			// 9^9 strings: gigabytes without the bound.
			name: "billion laughs",
			yaml: bomb(9, 9),
			want: "plugins.yaml:10:18: aliases expand to more than 10000 YAML nodes (an alias bomb?)",
		},
		{
			name: "alias inside its own anchor",
			yaml: "plugins:\n  - name: test/free\n    config:\n      config: { loop: &a [1, *a] }\n",
			want: "plugins.yaml:4:30: alias *a refers to a value that contains it",
		},
		{
			name: "alias of a typed config inside itself",
			yaml: "plugins:\n  - name: test/walker\n    config: &a { root: x, nested: *a }\n",
			want: "plugins.yaml:3:35: alias *a refers to a value that contains it",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := config.Parse("plugins.yaml", []byte(tt.yaml), nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, config.ErrTooLarge)
			var ce *config.Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.want, err.Error())
			assert.Less(t, time.Since(start), 5*time.Second, "refused without expanding")
		})
	}
}

func TestAFewAliasesStillWork(t *testing.T) {
	const yaml = `plugins:
  - name: test/free
    config:
      config:
        base: &base { units: metric, tags: [a, b] }
        copy: *base
        list: [*base, *base]
  - id: w1
    name: test/walker
    config: &walker { root: "${ROOT}", tags: &tags [x, y] }
  - id: w2
    name: test/walker
    config: *walker
  - id: w3
    name: test/walker
    config: { root: other, tags: *tags }
`
	f, err := config.Parse("plugins.yaml", []byte(yaml), func(string) (string, bool) { return "/r", true })
	require.NoError(t, err)
	require.Len(t, f.Entries, 4)
	base := map[string]any{"units": "metric", "tags": []any{"a", "b"}}
	assert.Equal(t, map[string]any{"base": base, "copy": base, "list": []any{base, base}}, f.Entries[0].Config.(*freeConfig).Config)
	for _, e := range f.Entries[1:3] {
		assert.Equal(t, "/r", e.Config.(*testConfig).Root, e.ID)
		assert.Equal(t, []string{"x", "y"}, e.Config.(*testConfig).Tags, e.ID)
	}
	assert.Equal(t, []string{"x", "y"}, f.Entries[3].Config.(*testConfig).Tags)
}

func TestFileSizeIsBounded(t *testing.T) {
	head := "plugins:\n  - name: test/plain\n"
	filler := func(n int) string { // comment lines, n bytes in all
		line := "# " + strings.Repeat("x", 97) + "\n"
		s := strings.Repeat(line, n/len(line))
		return s + "#" + strings.Repeat("x", n-len(s)-2) + "\n"
	}
	for _, tt := range []struct {
		name string
		size int
		want string
	}{
		{name: "at the limit", size: config.MaxFileSize},
		{name: "one byte over", size: config.MaxFileSize + 1, want: "plugins.yaml:10488:47: the file is larger than 1048576 bytes (1 MiB)"},
		{name: "far over", size: 8 * config.MaxFileSize, want: "plugins.yaml:10488:47: the file is larger than 1048576 bytes (1 MiB)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := head + filler(tt.size-len(head))
			require.Len(t, data, tt.size)
			path := filepath.Join(t.TempDir(), "plugins.yaml")
			require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
			f, err := config.Load(path)
			_, perr := config.Parse("plugins.yaml", []byte(data), nil)
			if tt.want == "" {
				require.NoError(t, err)
				require.NoError(t, perr)
				assert.Len(t, f.Entries, 1)
				return
			}
			require.Error(t, err)
			require.Error(t, perr)
			assert.ErrorIs(t, err, config.ErrTooLarge)
			assert.Equal(t, path+strings.TrimPrefix(tt.want, "plugins.yaml"), err.Error())
			assert.Equal(t, tt.want, perr.Error())
			assert.True(t, errors.Is(perr, config.ErrTooLarge))
		})
	}
}

// TestAliasBudgetIsTheFiles: disabled entries, decoded with their own
// variable lookup, share the file's alias budget.
func TestAliasBudgetIsTheFiles(t *testing.T) {
	var b strings.Builder
	b.WriteString("plugins:\n  - name: test/free\n    disabled: true\n    config:\n      config:\n")
	b.WriteString("        l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n        l1: &l1 [*l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0]\n        l2: &l2 [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]\n")
	for i := range 10 {
		fmt.Fprintf(&b, "  - { id: d%d, name: test/free, disabled: true, config: { config: { a: *l2, b: *l2, c: *l2 } } }\n", i)
	}
	_, err := config.Parse("plugins.yaml", []byte(b.String()), nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, config.ErrTooLarge)
	assert.Contains(t, err.Error(), "aliases expand to more than 10000 YAML nodes")
}
