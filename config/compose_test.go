package config_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
)

func parse(t *testing.T, src string) *config.File {
	t.Helper()
	f, err := config.Parse("plugins.yaml", []byte(src), func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	return f
}

func TestReloadReappliesOnlyWhatChanged(t *testing.T) {
	root := bus.New()
	defer root.Dispose()
	comp, err := config.Apply(root.Context(), parse(t, `
plugins:
  - name: test/walker
    config: { root: a }
  - id: other
    name: test/walker
    config: { root: b }
  - name: test/plain
  - name: group
    id: dev
    config:
      - { name: test/plain, id: inner }
      - { name: test/walker, id: inner-walker, config: { root: c } }
`))
	require.NoError(t, err)
	walker, other, plain := comp.Fiber("test/walker"), comp.Fiber("other"), comp.Fiber("test/plain")
	inner, innerWalker := comp.Fiber("inner"), comp.Fiber("inner-walker")
	for _, f := range []*bus.Fiber{walker, other, plain, inner, innerWalker} {
		require.NotNil(t, f)
		require.Equal(t, bus.StateActive, f.State())
	}

	ch, err := comp.Reload(parse(t, `
plugins:
  - name: test/walker
    config: { root: changed }
  - id: other
    name: test/walker
    config: { root: b }
  - name: group
    id: dev
    config:
      - { name: test/plain, id: inner }
      - { name: test/walker, id: inner-walker, config: { root: d } }
  - { name: test/plain, id: added }
`))
	require.NoError(t, err)
	assert.Equal(t, []string{"test/walker", "dev"}, ch.Updated)
	assert.Equal(t, []string{"other"}, ch.Kept)
	assert.Equal(t, []string{"test/plain"}, ch.Disposed)
	assert.Equal(t, []string{"added"}, ch.Applied)

	assert.Same(t, other, comp.Fiber("other"), "unchanged entry keeps its fiber")
	assert.Same(t, walker, comp.Fiber("test/walker"), "a changed entry is updated in its fiber")
	assert.Equal(t, uint64(2), walker.Generation())
	assert.Equal(t, "changed", walker.Config().(*testConfigAlias).Root)
	assert.Equal(t, bus.StateDisposed, plain.State())
	assert.Nil(t, comp.Fiber("test/plain"))
	assert.Same(t, inner, comp.Fiber("inner"), "unchanged entry of a changed group keeps its fiber")
	assert.Equal(t, uint64(2), innerWalker.Generation())
	assert.Equal(t, bus.StateActive, comp.Fiber("added").State())
}

type testConfigAlias = testConfig

func TestReloadReappliesOnNameOrDisabledChange(t *testing.T) {
	root := bus.New()
	defer root.Dispose()
	comp, err := config.Apply(root.Context(), parse(t, `
plugins:
  - { id: x, name: test/plain }
  - { id: y, name: test/plain }
`))
	require.NoError(t, err)
	x, y := comp.Fiber("x"), comp.Fiber("y")
	ch, err := comp.Reload(parse(t, `
plugins:
  - { id: x, name: test/walker, config: { root: . } }
  - { id: y, name: test/plain, disabled: true }
`))
	require.NoError(t, err)
	assert.Equal(t, []string{"x"}, ch.Reapplied)
	assert.Equal(t, []string{"y"}, ch.Disabled, "a disabled entry is reported as disabled, not re-applied")
	assert.Empty(t, ch.Applied)
	assert.Equal(t, bus.StateDisposed, x.State())
	assert.Equal(t, bus.StateDisposed, y.State())
	assert.Equal(t, bus.StateActive, comp.Fiber("x").State())
	assert.Nil(t, comp.Fiber("y"))

	// Still disabled, with another config, and a new disabled entry.
	ch, err = comp.Reload(parse(t, `
plugins:
  - { id: x, name: test/walker, config: { root: . } }
  - { id: y, name: test/walker, disabled: true, config: { root: b } }
  - { id: z, name: test/plain, disabled: true }
`))
	require.NoError(t, err)
	assert.Equal(t, []string{"x", "y"}, ch.Kept)
	assert.Equal(t, []string{"z"}, ch.Disabled)
	assert.Empty(t, ch.Updated)
	assert.Empty(t, ch.Reapplied)

	// Enabled again: applied.
	ch, err = comp.Reload(parse(t, `
plugins:
  - { id: x, name: test/walker, config: { root: . } }
  - { id: y, name: test/plain }
`))
	require.NoError(t, err)
	assert.Equal(t, []string{"y"}, ch.Applied)
	assert.Equal(t, []string{"z"}, ch.Disposed)
	assert.Empty(t, ch.Reapplied)
	assert.Empty(t, ch.Disabled)
	assert.Equal(t, bus.StateActive, comp.Fiber("y").State())
}

// TestOnEntryReportsEveryApply: the hook sees each entry begin and end
// to apply, with its error, at Apply and at a reload (applied, updated),
// never a group entry itself nor a disabled one.
func TestOnEntryReportsEveryApply(t *testing.T) {
	root := bus.New()
	defer root.Dispose()
	var seen []string
	hook := config.OnEntry(func(e config.Entry) func(error) {
		seen = append(seen, "start "+e.ID)
		return func(err error) {
			if err != nil {
				seen = append(seen, "failed "+e.ID)
				return
			}
			seen = append(seen, "done "+e.ID)
		}
	})
	comp, err := config.Apply(root.Context(), parse(t, `
plugins:
  - { id: a, name: test/walker, config: { root: a } }
  - { id: off, name: test/plain, disabled: true }
  - { id: bad, name: test/failing }
  - name: group
    id: dev
    config:
      - { name: test/plain, id: inner }
`), hook)
	require.Error(t, err)
	assert.Equal(t, []string{"start a", "done a", "start bad", "failed bad", "start inner", "done inner"}, seen)

	seen = nil
	_, err = comp.Reload(parse(t, `
plugins:
  - { id: a, name: test/walker, config: { root: changed } }
  - { id: off, name: test/plain, disabled: true }
  - name: group
    id: dev
    config:
      - { name: test/plain, id: inner }
      - { name: test/plain, id: added }
`))
	require.NoError(t, err)
	assert.Equal(t, []string{"start a", "done a", "start added", "done added"}, seen)
}

func init() {
	bus.Register(bus.Module{Name: "test/failing", New: func() bus.Plugin {
		return bus.PluginFunc("test/failing", func(*bus.Context, any) error { return fmt.Errorf("test/failing: open: %w", assert.AnError) })
	}})
}

func TestApplyReportsFailingEntryAndKeepsTheRest(t *testing.T) {
	root := bus.New()
	defer root.Dispose()
	comp, err := config.Apply(root.Context(), parse(t, `
plugins:
  - name: test/failing
  - name: test/plain
`))
	require.Error(t, err)
	assert.ErrorIs(t, err, assert.AnError)
	// The entry's id and line, then the plugin's error, its name said once.
	assert.EqualError(t, err, "test/failing (line 3): open: "+assert.AnError.Error())
	var pe *bus.PluginError
	require.ErrorAs(t, err, &pe, "the plugin's error is in the chain")
	assert.Equal(t, "test/failing", pe.Plugin)
	require.NotNil(t, comp)
	assert.Equal(t, bus.StateFailed, comp.Fiber("test/failing").State())
	assert.Equal(t, bus.StateActive, comp.Fiber("test/plain").State())
}

func TestSchemaListsRegisteredPluginsAndKeys(t *testing.T) {
	s, err := config.Schema()
	require.NoError(t, err)
	assert.Contains(t, string(s), `"const": "test/walker"`)
	assert.Contains(t, string(s), `"depth"`)
	assert.Contains(t, string(s), `"required": [`)
}
