package bus_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

var errBoom = errors.New("boom")

func TestFiberMovesThroughLifecycleStates(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	var duringApply, duringDispose bus.State
	p := plugin("states", func(c *bus.Context) error {
		duringApply = c.Fiber().State()
		return c.Effect(func() func() {
			f := c.Fiber()
			return func() { duringDispose = f.State() }
		})
	})
	f := apply(t, c, p, nil)
	assert.Equal(t, bus.StateLoading, duringApply)
	assert.Equal(t, bus.StateActive, f.State())
	require.NoError(t, f.Dispose())
	assert.Equal(t, bus.StateUnloading, duringDispose)
	assert.Equal(t, bus.StateDisposed, f.State())
}

func TestFiberWaitingForServicesIsPending(t *testing.T) {
	root := newRoot(t)
	p := &bus.Func[struct{}]{ID: "waits", Deps: bus.Inject{Required: []bus.ServiceKey{bus.NewService[any]("nobody/provides")}}}
	f := apply(t, root.Context(), p, nil)
	assert.Equal(t, bus.StatePending, f.State())
	assert.Equal(t, "pending", f.State().String())
}

func TestFiberApplyFailureRollsBackAndLeavesFiberFailed(t *testing.T) {
	ev := bus.NewEvent[int]("test/rollback")
	svc := bus.NewService[int]("test/rollback")
	cases := []struct {
		name string
		fail func() error
		is   error
	}{
		{"error", func() error { return errBoom }, errBoom},
		{"panic", func() error { panic("kaput") }, bus.ErrPanic},
		{"panic with error", func() error { panic(errBoom) }, errBoom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			c := root.Context()
			tr := &trace{}
			var child *bus.Fiber
			p := plugin("fails", func(c *bus.Context) error {
				ev.On(c, func(_ context.Context, _ int) error { tr.add("listener"); return nil })
				if _, err := svc.Provide(c, 1); err != nil {
					return err
				}
				effect(t, c, tr, "effect")
				var err error
				child, err = c.Plugin(plugin("child", func(c *bus.Context) error {
					effect(t, c, tr, "child effect")
					return nil
				}), nil)
				if err != nil {
					return err
				}
				return tc.fail()
			})
			f, err := c.Plugin(p, nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.is)
			var perr *bus.PluginError
			require.ErrorAs(t, err, &perr)
			assert.Equal(t, "fails", perr.Plugin)
			assert.Equal(t, "apply", perr.Op)

			require.NotNil(t, f)
			assert.Equal(t, bus.StateFailed, f.State())
			assert.ErrorIs(t, f.Err(), tc.is)
			assert.Equal(t, bus.StateDisposed, child.State())
			assert.Equal(t, []string{"child effect", "effect"}, tr.get())
			assert.Zero(t, root.ListenerCount(ev.Name()))
			_, err = svc.Get(c)
			assert.ErrorIs(t, err, bus.ErrServiceMissing)

			// The host keeps running.
			require.NoError(t, ev.Emit(context.Background(), c, 1))
			ok := apply(t, c, plugin("works", func(*bus.Context) error { return nil }), nil)
			assert.Equal(t, bus.StateActive, ok.State())
		})
	}
}

func TestFiberDisposesEffectsInReverseOrder(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	f := apply(t, root.Context(), plugin("lifo", func(c *bus.Context) error {
		for _, n := range []string{"first", "second", "third"} {
			effect(t, c, tr, n)
		}
		return nil
	}), nil)
	require.NoError(t, f.Dispose())
	assert.Equal(t, []string{"third", "second", "first"}, tr.get())
}

func TestFiberRunsEffectDisposersSerially(t *testing.T) {
	root := newRoot(t)
	var running, overlaps atomic.Int32
	f := apply(t, root.Context(), plugin("serial", func(c *bus.Context) error {
		for range 8 {
			require.NoError(t, c.Effect(func() func() {
				return func() {
					if running.Add(1) > 1 {
						overlaps.Add(1)
					}
					time.Sleep(time.Millisecond)
					running.Add(-1)
				}
			}))
		}
		return nil
	}), nil)
	require.NoError(t, f.Dispose())
	assert.Zero(t, overlaps.Load())
}

func TestFiberRunsEachEffectDisposerOnce(t *testing.T) {
	root := newRoot(t)
	var calls atomic.Int32
	p := plugin("once", func(c *bus.Context) error {
		return c.Effect(func() func() { return func() { calls.Add(1) } })
	})
	f := apply(t, root.Context(), p, nil)
	require.NoError(t, f.Update(nil)) // reload: the first disposer runs
	assert.Equal(t, int32(1), calls.Load())
	require.NoError(t, f.Dispose())
	require.NoError(t, f.Dispose())
	require.NoError(t, root.Dispose())
	assert.Equal(t, int32(2), calls.Load())
}

func TestEffectRunsImmediatelyAndAcceptsNilDisposer(t *testing.T) {
	root := newRoot(t)
	ran := false
	apply(t, root.Context(), plugin("nil", func(c *bus.Context) error {
		return c.Effect(func() func() { ran = true; return nil })
	}), nil)
	assert.True(t, ran)
}

func TestNestedPluginsAreEffectsOfTheirParent(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	var child *bus.Fiber
	parent := apply(t, root.Context(), plugin("parent", func(c *bus.Context) error {
		effect(t, c, tr, "parent before")
		var err error
		child, err = c.Plugin(plugin("child", func(c *bus.Context) error {
			effect(t, c, tr, "child")
			return nil
		}), nil)
		effect(t, c, tr, "parent after")
		return err
	}), nil)
	require.Equal(t, bus.StateActive, child.State())
	require.NoError(t, parent.Dispose())
	assert.Equal(t, bus.StateDisposed, child.State())
	assert.Equal(t, []string{"parent after", "child", "parent before"}, tr.get())
}

func TestDisposedChildIsForgottenByItsParent(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	var child *bus.Fiber
	parent := apply(t, root.Context(), plugin("parent", func(c *bus.Context) error {
		var err error
		child, err = c.Plugin(plugin("child", func(c *bus.Context) error {
			effect(t, c, tr, "child")
			return nil
		}), nil)
		return err
	}), nil)
	require.NoError(t, child.Dispose())
	require.NoError(t, parent.Dispose())
	assert.Equal(t, []string{"child"}, tr.get())
}

func TestFiberDisposedWhileLoadingIsDisposedAfterApply(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	var f *bus.Fiber
	apply(t, root.Context(), plugin("self-dispose", func(c *bus.Context) error {
		f = c.Fiber()
		effect(t, c, tr, "effect")
		require.NoError(t, f.Dispose())
		assert.Equal(t, bus.StateLoading, f.State())
		return nil
	}), nil)
	assert.Equal(t, bus.StateDisposed, f.State())
	assert.Equal(t, []string{"effect"}, tr.get())
	assert.ErrorIs(t, f.Update(nil), bus.ErrDisposed)
}

func TestDisposingFiberTwiceIsNoOp(t *testing.T) {
	root := newRoot(t)
	var calls int
	f := apply(t, root.Context(), plugin("twice", func(c *bus.Context) error {
		return c.Effect(func() func() { return func() { calls++ } })
	}), nil)
	require.NoError(t, f.Dispose())
	require.NoError(t, f.Dispose())
	assert.Equal(t, 1, calls)
	assert.Equal(t, bus.StateDisposed, f.State())
	require.NoError(t, root.Dispose())
	require.NoError(t, root.Dispose())
}

func TestPanickingDisposerDoesNotStopTheOthers(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	f := apply(t, root.Context(), plugin("panicky", func(c *bus.Context) error {
		effect(t, c, tr, "first")
		return c.Effect(func() func() { return func() { panic("in disposer") } })
	}), nil)
	require.NoError(t, f.Dispose())
	assert.Equal(t, []string{"first"}, tr.get())
	assert.Equal(t, bus.StateDisposed, f.State())
}

func TestRootDisposesPluginsLastAppliedFirst(t *testing.T) {
	root := bus.New()
	tr := &trace{}
	for _, n := range []string{"a", "b", "c"} {
		apply(t, root.Context(), plugin(n, func(c *bus.Context) error {
			effect(t, c, tr, n)
			return nil
		}), nil)
	}
	require.NoError(t, root.Dispose())
	assert.Equal(t, []string{"c", "b", "a"}, tr.get())
}

func TestStateNames(t *testing.T) {
	names := map[bus.State]string{
		bus.StatePending:   "pending",
		bus.StateLoading:   "loading",
		bus.StateActive:    "active",
		bus.StateFailed:    "failed",
		bus.StateUnloading: "unloading",
		bus.StateDisposed:  "disposed",
		bus.State(99):      "unknown",
	}
	for s, want := range names {
		assert.Equal(t, want, s.String())
	}
}

func TestFailUndoesAnActiveFiberAndUpdateReappliesIt(t *testing.T) {
	root := bus.New()
	defer root.Dispose()
	applied, disposed := 0, 0
	p := bus.PluginFunc("flaky", func(c *bus.Context, _ any) error {
		applied++
		return c.Effect(func() func() { return func() { disposed++ } })
	})
	f, err := root.Context().Plugin(p, nil)
	require.NoError(t, err)
	cause := errors.New("server went away")
	f.Fail(cause)
	assert.Equal(t, bus.StateFailed, f.State())
	assert.Equal(t, 1, disposed, "what the fiber registered is undone")
	assert.ErrorIs(t, f.Err(), cause)
	var perr *bus.PluginError
	require.ErrorAs(t, f.Err(), &perr)
	assert.Equal(t, "flaky", perr.Plugin)

	f.Fail(cause) // not active: nothing happens
	assert.Equal(t, 1, disposed)

	require.NoError(t, f.Update(nil))
	assert.Equal(t, bus.StateActive, f.State())
	assert.Equal(t, 2, applied)
}

// A plugin's error that begins with its name says it once in the
// PluginError's message; the error itself stays in the chain.
func TestPluginErrorSaysThePluginsNameOnce(t *testing.T) {
	inner := errors.New("tools/x: open root: no such dir")
	err := &bus.PluginError{Plugin: "tools/x", Op: "apply", Err: inner}
	assert.EqualError(t, err, `plugin "tools/x": apply: open root: no such dir`)
	assert.ErrorIs(t, err, inner)
	other := &bus.PluginError{Plugin: "tools/x", Op: "apply", Err: errors.New("tools/xy: boom")}
	assert.EqualError(t, other, `plugin "tools/x": apply: tools/xy: boom`)
}
