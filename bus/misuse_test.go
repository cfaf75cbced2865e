package bus_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

func TestApplyingNilPluginFails(t *testing.T) {
	root := newRoot(t)
	f, err := root.Context().Plugin(nil, nil)
	assert.ErrorIs(t, err, bus.ErrNilPlugin)
	assert.Nil(t, f)
	f, err = root.Context().Plugin((*bus.Func[struct{}])(nil), nil)
	assert.ErrorIs(t, err, bus.ErrNilPlugin)
	assert.Nil(t, f)
}

func TestFuncWithoutRunAppliesAsNoOp(t *testing.T) {
	root := newRoot(t)
	f := apply(t, root.Context(), &bus.Func[struct{}]{ID: "empty"}, nil)
	assert.Equal(t, bus.StateActive, f.State())
	assert.Equal(t, "empty", f.Name())
}

func TestDispatchAfterRootDisposedFails(t *testing.T) {
	root := bus.New()
	c := root.Context()
	tr := &trace{}
	noteEvent.On(c, recordAs(tr, "listener"))
	require.NoError(t, root.Dispose())
	assert.ErrorIs(t, noteEvent.Emit(bg, c, &note{}), bus.ErrDisposed)
	assert.ErrorIs(t, noteEvent.Check(bg, c, &note{}), bus.ErrDisposed)
	assert.ErrorIs(t, noteEvent.Observe(bg, c, &note{}), bus.ErrDisposed)
	assert.ErrorIs(t, noteEvent.Parallel(bg, c, &note{}), bus.ErrDisposed)
	_, err := askHook.Serial(bg, c, "q")
	assert.ErrorIs(t, err, bus.ErrDisposed)
	_, err = askHook.Bail(bg, c, "q")
	assert.ErrorIs(t, err, bus.ErrDisposed)
	_, err = wrapFall.Run(bg, c, "x", echo(tr))
	assert.ErrorIs(t, err, bus.ErrDisposed)
	assert.Empty(t, tr.get())
}

func TestApplyAfterRootDisposedFails(t *testing.T) {
	root := bus.New()
	require.NoError(t, root.Dispose())
	_, err := root.Context().Plugin(plugin("late", func(*bus.Context) error { return nil }), nil)
	assert.ErrorIs(t, err, bus.ErrDisposed)
}

func TestRegisteringOnDisposedFiberFails(t *testing.T) {
	root := newRoot(t)
	var c *bus.Context
	f := apply(t, root.Context(), plugin("gone", func(pc *bus.Context) error { c = pc; return nil }), nil)
	require.NoError(t, f.Dispose())

	ran := false
	err := c.Effect(func() func() { ran = true; return nil })
	assert.ErrorIs(t, err, bus.ErrDisposed)
	assert.False(t, ran, "an effect of a disposed fiber must not run")

	_, err = bus.NewService[int]("test/late").Provide(c, 1)
	assert.ErrorIs(t, err, bus.ErrDisposed)
	_, err = bus.NewService[int]("test/late").Get(root.Context())
	assert.ErrorIs(t, err, bus.ErrServiceMissing)

	_, err = c.Plugin(plugin("child", func(*bus.Context) error { return nil }), nil)
	assert.ErrorIs(t, err, bus.ErrDisposed)

	tr := &trace{}
	dispose := noteEvent.On(c, recordAs(tr, "late"))
	require.NoError(t, noteEvent.Emit(bg, root.Context(), &note{}))
	assert.Empty(t, tr.get())
	assert.Zero(t, root.ListenerCount(noteEvent.Name()))
	dispose()
}

func TestRegisteringOnDisposedRootFails(t *testing.T) {
	root := bus.New()
	c := root.Context()
	require.NoError(t, root.Dispose())
	assert.ErrorIs(t, c.Effect(func() func() { return nil }), bus.ErrDisposed)
	_, err := bus.NewService[int]("test/late").Provide(c, 1)
	assert.ErrorIs(t, err, bus.ErrDisposed)
	noteEvent.On(c, func(context.Context, *note) error { return nil })
	assert.Zero(t, root.ListenerCount(noteEvent.Name()))
}

func TestListenerCountOfUnknownEventIsZero(t *testing.T) {
	root := newRoot(t)
	assert.Zero(t, root.ListenerCount("test/never-registered"))
}
