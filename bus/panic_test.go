package bus_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

func TestPanickingListenerBecomesPluginErrorNamingItsPlugin(t *testing.T) {
	hook := bus.NewHook[*note, int]("test/panic-hook")
	fall := bus.NewWaterfall[*note, int]("test/panic-fall")
	cases := []struct {
		name     string
		register func(c *bus.Context, opts ...bus.ListenOption)
		dispatch func(c *bus.Context) error
		op       string
	}{
		{
			name: "emit",
			register: func(c *bus.Context, opts ...bus.ListenOption) {
				noteEvent.On(c, func(context.Context, *note) error { panic("listener") }, opts...)
			},
			dispatch: func(c *bus.Context) error { return noteEvent.Emit(bg, c, &note{"s"}) },
			op:       "test/note",
		},
		{
			name: "observe",
			register: func(c *bus.Context, opts ...bus.ListenOption) {
				noteEvent.On(c, func(context.Context, *note) error { panic("listener") }, opts...)
			},
			dispatch: func(c *bus.Context) error { return noteEvent.Observe(bg, c, &note{"s"}) },
			op:       "test/note",
		},
		{
			name: "parallel",
			register: func(c *bus.Context, opts ...bus.ListenOption) {
				noteEvent.On(c, func(context.Context, *note) error { panic("listener") }, opts...)
			},
			dispatch: func(c *bus.Context) error { return noteEvent.Parallel(bg, c, &note{"s"}) },
			op:       "test/note",
		},
		{
			name: "serial",
			register: func(c *bus.Context, opts ...bus.ListenOption) {
				hook.On(c, func(context.Context, *note) (int, error) { panic("listener") }, opts...)
			},
			dispatch: func(c *bus.Context) error { _, err := hook.Serial(bg, c, &note{"s"}); return err },
			op:       "test/panic-hook",
		},
		{
			name: "waterfall",
			register: func(c *bus.Context, opts ...bus.ListenOption) {
				fall.On(c, func(context.Context, *note, bus.Next[*note, int]) (int, error) { panic("listener") }, opts...)
			},
			dispatch: func(c *bus.Context) error { _, err := fall.Run(bg, c, &note{"s"}, nil); return err },
			op:       "test/panic-fall",
		},
		{
			name: "veto",
			register: func(c *bus.Context, opts ...bus.ListenOption) {
				bus.Veto.On(c, func(context.Context, bus.Dispatch) error { panic("listener") }, opts...)
			},
			dispatch: func(c *bus.Context) error { return noteEvent.Emit(bg, c, &note{"s"}) },
			op:       "internal/dispatch",
		},
	}
	// Listeners with a filter or Once take the general dispatch path.
	paths := map[string][]bus.ListenOption{"plain": nil, "once": {bus.Once}}
	for _, tc := range cases {
		for path, opts := range paths {
			t.Run(tc.name+"/"+path, func(t *testing.T) {
				root := newRoot(t)
				apply(t, root.Context(), plugin("panicky", func(c *bus.Context) error {
					tc.register(c, opts...)
					return nil
				}), nil)
				err := tc.dispatch(root.Context())
				require.Error(t, err)
				assert.ErrorIs(t, err, bus.ErrPanic)
				var perr *bus.PluginError
				require.ErrorAs(t, err, &perr)
				assert.Equal(t, "panicky", perr.Plugin)
				assert.Equal(t, tc.op, perr.Op)
				assert.Contains(t, err.Error(), `plugin "panicky"`)
			})
		}
	}
}

func TestPanicInNestedWaterfallListenerNamesThatListener(t *testing.T) {
	root := newRoot(t)
	fall := bus.NewWaterfall[int, int]("test/nested-panic")
	var after, unwound bool
	apply(t, root.Context(), plugin("outer", func(c *bus.Context) error {
		fall.On(c, func(ctx context.Context, p int, next bus.Next[int, int]) (int, error) {
			defer func() { unwound = true }()
			r, err := next(ctx, p)
			after = true
			return r, err
		})
		return nil
	}), nil)
	apply(t, root.Context(), plugin("inner", func(c *bus.Context) error {
		fall.On(c, func(context.Context, int, bus.Next[int, int]) (int, error) { panic("inner") })
		return nil
	}), nil)
	_, err := fall.Run(bg, root.Context(), 1, nil)
	require.ErrorIs(t, err, bus.ErrPanic)
	var perr *bus.PluginError
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "inner", perr.Plugin, "the panicking listener is named, not the one around it")
	assert.True(t, unwound, "the outer listener's defers ran")
	assert.False(t, after, "the panic unwound the outer listener")

	// The waterfall's chain serves the next dispatch, unharmed.
	_, err = fall.Run(bg, root.Context(), 1, nil)
	require.ErrorIs(t, err, bus.ErrPanic)
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "inner", perr.Plugin)
}

func TestPanicInWaterfallFallbackIsAnErrorTheListenersSee(t *testing.T) {
	root := newRoot(t)
	fall := bus.NewWaterfall[int, int]("test/fallback-panic")
	var seen error
	apply(t, root.Context(), plugin("outer", func(c *bus.Context) error {
		fall.On(c, func(ctx context.Context, p int, next bus.Next[int, int]) (int, error) {
			r, err := next(ctx, p)
			seen = err
			return r, err
		})
		return nil
	}), nil)
	_, err := fall.Run(bg, root.Context(), 1, func(context.Context, int) (int, error) { panic("provider") })
	require.ErrorIs(t, err, bus.ErrPanic)
	assert.ErrorIs(t, seen, bus.ErrPanic, "a panicking fallback is an error its callers see")
	var perr *bus.PluginError
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "fallback", perr.Plugin)
}
