package bus_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

var askHook = bus.NewHook[string, int]("test/ask")

// answer returns a hook listener recording name and answering r.
func answer(tr *trace, name string, r int, err error) func(context.Context, string) (int, error) {
	return func(context.Context, string) (int, error) { tr.add(name); return r, err }
}

func TestSerialReturnsFirstNonZeroResult(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	askHook.On(c, answer(tr, "zero", 0, nil))
	askHook.On(c, answer(tr, "seven", 7, nil))
	askHook.On(c, answer(tr, "nine", 9, nil))
	got, err := askHook.Serial(bg, c, "q")
	require.NoError(t, err)
	assert.Equal(t, 7, got)
	assert.Equal(t, []string{"zero", "seven"}, tr.get())
	assert.Equal(t, "test/ask", askHook.Name())
}

func TestSerialWithoutAnswerReturnsZero(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	askHook.On(root.Context(), answer(tr, "zero", 0, nil))
	got, err := askHook.Serial(bg, root.Context(), "q")
	require.NoError(t, err)
	assert.Zero(t, got)
}

func TestSerialStopsAtError(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	askHook.On(c, answer(tr, "fails", 0, errBoom))
	askHook.On(c, answer(tr, "seven", 7, nil))
	got, err := askHook.Serial(bg, c, "q")
	assert.ErrorIs(t, err, errBoom)
	var perr *bus.PluginError
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "root", perr.Plugin)
	assert.Zero(t, got)
	assert.Equal(t, []string{"fails"}, tr.get())
}

func TestSerialStopsWhenContextIsCancelledBetweenListeners(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	askHook.On(c, func(context.Context, string) (int, error) { tr.add("cancels"); cancel(); return 0, nil })
	askHook.On(c, answer(tr, "seven", 7, nil))
	got, err := askHook.Serial(ctx, c, "q")
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, got)
	assert.Equal(t, []string{"cancels"}, tr.get())
}

func TestBailIgnoresContextAndReturnsFirstNonZeroResult(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	askHook.On(c, func(context.Context, string) (int, error) { tr.add("cancels"); cancel(); return 0, nil })
	askHook.On(c, answer(tr, "seven", 7, nil))
	askHook.On(c, answer(tr, "nine", 9, nil))
	got, err := askHook.Bail(ctx, c, "q")
	require.NoError(t, err)
	assert.Equal(t, 7, got)
	assert.Equal(t, []string{"cancels", "seven"}, tr.get())
}
