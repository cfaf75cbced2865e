package bus_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

var wrapFall = bus.NewWaterfall[string, string]("test/wrap")

// layer returns a waterfall listener that wraps the rest in name[...].
func layer(tr *trace, name string) func(context.Context, string, bus.Next[string, string]) (string, error) {
	return func(ctx context.Context, p string, next bus.Next[string, string]) (string, error) {
		tr.add(name + " in")
		r, err := next(ctx, p)
		tr.add(name + " out")
		return name + "[" + r + "]", err
	}
}

func echo(tr *trace) bus.Next[string, string] {
	return func(_ context.Context, p string) (string, error) { tr.add("fallback"); return p, nil }
}

func TestWaterfallRunsListenersAsOnion(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	wrapFall.On(c, layer(tr, "inner"))
	wrapFall.On(c, layer(tr, "outer"), bus.Prepend)
	got, err := wrapFall.Run(bg, c, "x", echo(tr))
	require.NoError(t, err)
	assert.Equal(t, "outer[inner[x]]", got)
	assert.Equal(t, []string{"outer in", "inner in", "fallback", "inner out", "outer out"}, tr.get())
	assert.Equal(t, "test/wrap", wrapFall.Name())
}

func TestWaterfallListenerPassesChangedPayloadToNext(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	wrapFall.On(c, func(ctx context.Context, p string, next bus.Next[string, string]) (string, error) {
		return next(ctx, p+"!")
	})
	got, err := wrapFall.Run(bg, c, "x", echo(tr))
	require.NoError(t, err)
	assert.Equal(t, "x!", got)
}

func TestWaterfallListenerCanShortCircuit(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	wrapFall.On(c, layer(tr, "outer"))
	wrapFall.On(c, func(context.Context, string, bus.Next[string, string]) (string, error) {
		tr.add("cache")
		return "cached", nil
	})
	wrapFall.On(c, layer(tr, "never"))
	got, err := wrapFall.Run(bg, c, "x", echo(tr))
	require.NoError(t, err)
	assert.Equal(t, "outer[cached]", got)
	assert.Equal(t, []string{"outer in", "cache", "outer out"}, tr.get())
}

func TestWaterfallWithoutListenersCallsFallback(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	got, err := wrapFall.Run(bg, root.Context(), "x", echo(tr))
	require.NoError(t, err)
	assert.Equal(t, "x", got)
}

func TestWaterfallWithoutFallbackIsErrNoHandler(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	_, err := wrapFall.Run(bg, root.Context(), "x", nil)
	assert.ErrorIs(t, err, bus.ErrNoHandler)
	wrapFall.On(root.Context(), layer(tr, "a"))
	_, err = wrapFall.Run(bg, root.Context(), "x", nil)
	assert.ErrorIs(t, err, bus.ErrNoHandler)
}

func TestWaterfallPassesErrorsThrough(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	wrapFall.On(root.Context(), layer(tr, "a"))
	_, err := wrapFall.Run(bg, root.Context(), "x", func(context.Context, string) (string, error) { return "", errBoom })
	assert.ErrorIs(t, err, errBoom)
	assert.Equal(t, []string{"a in", "a out"}, tr.get())
}

func TestWaterfallNextAfterRunReturnedIsRefused(t *testing.T) {
	root := bus.New()
	defer root.Dispose()
	wf := bus.NewWaterfall[string, string]("test/next-after-return")
	var kept bus.Next[string, string]
	wf.On(root.Context(), func(ctx context.Context, p string, next bus.Next[string, string]) (string, error) {
		kept = next
		return next(ctx, p)
	})
	fallback := func(_ context.Context, p string) (string, error) { return "got " + p, nil }
	got, err := wf.Run(context.Background(), root.Context(), "a", fallback)
	require.NoError(t, err)
	assert.Equal(t, "got a", got)
	// The chain is reused by the next dispatch; the old next must not
	// reach into it.
	_, err = kept(context.Background(), "late")
	require.ErrorIs(t, err, bus.ErrNextAfterReturn)
	got, err = wf.Run(context.Background(), root.Context(), "b", fallback)
	require.NoError(t, err)
	assert.Equal(t, "got b", got)
	_, err = kept(context.Background(), "late")
	require.ErrorIs(t, err, bus.ErrNextAfterReturn)
}
