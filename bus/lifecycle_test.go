package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

func TestRequiredServiceLostWhileLoadingSendsFiberBackToPending(t *testing.T) {
	svc := bus.NewService[*store]("test/db")
	cases := []struct {
		name string
		// provide provides svc and returns what takes it away again.
		provide func(t *testing.T, root *bus.Root) (lose func())
	}{
		{"withdrawn", func(t *testing.T, root *bus.Root) func() {
			withdraw, err := svc.Provide(root.Context(), &store{"pg"})
			require.NoError(t, err)
			return withdraw
		}},
		{"withdrawn by another goroutine", func(t *testing.T, root *bus.Root) func() {
			withdraw, err := svc.Provide(root.Context(), &store{"pg"})
			require.NoError(t, err)
			return func() {
				done := make(chan struct{})
				go func() { defer close(done); withdraw() }()
				<-done
			}
		}},
		{"provider disposed", func(t *testing.T, root *bus.Root) func() {
			provider := apply(t, root.Context(), plugin("provider", func(c *bus.Context) error {
				_, err := svc.Provide(c, &store{"pg"})
				return err
			}), nil)
			return func() { require.NoError(t, provider.Dispose()) }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			lose := tc.provide(t, root)
			tr := &trace{}
			applies := 0
			user := &bus.Func[struct{}]{ID: "user", Deps: bus.Inject{Required: []bus.ServiceKey{svc}}, Run: func(c *bus.Context, _ struct{}) error {
				applies++
				s, err := svc.Get(c)
				if err != nil {
					return err
				}
				tr.add("applied with " + s.name)
				effect(t, c, tr, "disposed")
				if applies == 1 {
					// The service goes while the plugin is still loading.
					lose()
				}
				return nil
			}}
			f := apply(t, root.Context(), user, nil)
			assert.Equal(t, bus.StatePending, f.State())
			assert.Equal(t, []bus.Waiting{{Plugin: "user", Missing: []string{svc.Name()}}}, root.Pending())
			assert.Equal(t, []string{"applied with pg", "disposed"}, tr.get(), "what the apply registered is undone")

			_, err := svc.Provide(root.Context(), &store{"pg2"})
			require.NoError(t, err)
			assert.Equal(t, bus.StateActive, f.State())
			assert.Equal(t, 2, applies)
			assert.Equal(t, []string{"applied with pg", "disposed", "applied with pg2"}, tr.get())
			assert.Empty(t, root.Pending())
		})
	}
}

func TestFailedFiberWithoutRequiredServiceWaitsInsteadOfReapplying(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/db")
	withdraw, err := svc.Provide(root.Context(), &store{"pg"})
	require.NoError(t, err)
	var got []string
	user := bus.PluginFunc("user", func(c *bus.Context, fail bool) error {
		s, err := svc.Get(c)
		if err != nil {
			return err
		}
		got = append(got, s.name)
		if fail {
			return errBoom
		}
		return nil
	})
	user.Deps = bus.Inject{Required: []bus.ServiceKey{svc}}
	f, err := root.Context().Plugin(user, true)
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, bus.StateFailed, f.State())
	withdraw()

	// The update finds the service missing: the fiber waits for it rather
	// than being applied without it.
	require.NoError(t, f.Update(false))
	assert.Equal(t, bus.StatePending, f.State())
	assert.NoError(t, f.Err())
	assert.Equal(t, []bus.Waiting{{Plugin: "user", Missing: []string{svc.Name()}}}, root.Pending())

	_, err = svc.Provide(root.Context(), &store{"pg2"})
	require.NoError(t, err)
	assert.Equal(t, bus.StateActive, f.State())
	assert.Equal(t, []string{"pg", "pg2"}, got)
}

func TestDisposedContextRefusesReads(t *testing.T) {
	svc := bus.NewService[*store]("test/db")
	tools := bus.NewService[int]("test/tool/a")
	cases := []struct {
		name string
		read func(c *bus.Context) error
	}{
		{"get", func(c *bus.Context) error { _, err := svc.Get(c); return err }},
		{"lookup", func(c *bus.Context) error { _, err := bus.Lookup[int](c, "test/tool/"); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			_, err := svc.Provide(root.Context(), &store{"pg"})
			require.NoError(t, err)
			_, err = tools.Provide(root.Context(), 1)
			require.NoError(t, err)
			var c *bus.Context
			f := apply(t, root.Context(), &bus.Func[struct{}]{
				ID:   "reader",
				Deps: bus.Inject{Required: []bus.ServiceKey{svc}, Optional: []bus.ServiceKey{bus.NewServiceSet[int]("test/tool/")}},
				Run: func(pc *bus.Context, _ struct{}) error {
					c = pc
					return tc.read(pc)
				},
			}, nil)
			require.NoError(t, f.Dispose())
			assert.ErrorIs(t, tc.read(c), bus.ErrDisposed)
			// A refused effect says the same.
			assert.ErrorIs(t, c.Effect(func() func() { return nil }), bus.ErrDisposed)
		})
	}
}

func TestReadsStillWorkWhileFiberDisposes(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/db")
	_, err := svc.Provide(root.Context(), &store{"pg"})
	require.NoError(t, err)
	var readErr error
	f := apply(t, root.Context(), &bus.Func[struct{}]{ID: "reader", Deps: bus.Inject{Required: []bus.ServiceKey{svc}}, Run: func(c *bus.Context, _ struct{}) error {
		return c.Effect(func() func() {
			return func() { _, readErr = svc.Get(c) }
		})
	}}, nil)
	require.NoError(t, f.Dispose())
	assert.NoError(t, readErr, "cleanup may still read what the plugin declared")
}

func TestEffectIsRefusedOnceDisposalIsRequested(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	var effectErr, lateErr error
	ranLate := false
	f := apply(t, root.Context(), plugin("self-dispose", func(c *bus.Context) error {
		// Disposal is requested while the effect runs: its disposer runs
		// at once, since the fiber will not run it later.
		effectErr = c.Effect(func() func() {
			require.NoError(t, c.Fiber().Dispose())
			return func() { tr.add("racing effect disposed") }
		})
		assert.Equal(t, []string{"racing effect disposed"}, tr.get())
		// Requested before the effect: it does not run at all.
		lateErr = c.Effect(func() func() { ranLate = true; return nil })
		_, err := bus.NewService[int]("test/late").Provide(c, 1)
		assert.ErrorIs(t, err, bus.ErrDisposed)
		_, err = c.Plugin(plugin("child", func(*bus.Context) error { return nil }), nil)
		assert.ErrorIs(t, err, bus.ErrDisposed)
		return nil
	}), nil)
	assert.ErrorIs(t, effectErr, bus.ErrDisposed)
	assert.ErrorIs(t, lateErr, bus.ErrDisposed)
	assert.False(t, ranLate)
	assert.Equal(t, bus.StateDisposed, f.State())
	assert.Equal(t, []string{"racing effect disposed"}, tr.get())
}

func TestAnonymousPluginIsNamedAfterNearestNamedAncestor(t *testing.T) {
	out := &syncBuffer{}
	root := newRoot(t, bus.WithLogger(hclog.New(&hclog.LoggerOptions{Name: "vigil", Output: out, Level: hclog.Info})))
	anonymous := func(fail bool) bus.Plugin {
		return plugin("", func(c *bus.Context) error {
			c.Logger().Info("hello from anonymous")
			if fail {
				return errBoom
			}
			return nil
		})
	}
	var inner *bus.Fiber
	var innerErr error
	apply(t, root.Context(), plugin("agent", func(c *bus.Context) error {
		// Two anonymous levels: the name comes from the nearest named one.
		_, err := c.Plugin(plugin("", func(c *bus.Context) error {
			inner, innerErr = c.Plugin(anonymous(true), nil)
			return nil
		}), nil)
		return err
	}), nil)
	var perr *bus.PluginError
	require.ErrorAs(t, innerErr, &perr)
	assert.Equal(t, "agent", perr.Plugin)
	assert.Equal(t, "agent", inner.Name())
	assert.Contains(t, out.String(), "vigil.agent: hello from anonymous")

	top, err := root.Context().Plugin(anonymous(true), nil)
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "root", perr.Plugin)
	assert.Equal(t, "root", top.Name())
	for _, line := range strings.Split(out.String(), "\n") {
		assert.NotContains(t, line, "vigil.:", "no logger is named after an empty name")
	}
}

func TestContextIsCancelledWhenDisposalIsRequested(t *testing.T) {
	root := newRoot(t)
	started := make(chan *bus.Fiber)
	applied := make(chan error)
	var cause error
	go func() {
		_, err := root.Context().Plugin(plugin("waits", func(c *bus.Context) error {
			select {
			case <-c.Done():
				t.Error("done before disposal")
			default:
			}
			require.NoError(t, c.Context().Err())
			started <- c.Fiber()
			// The apply blocks until it learns it is no longer wanted.
			<-c.Done()
			cause = context.Cause(c.Context())
			return c.Context().Err()
		}), nil)
		applied <- err
	}()
	f := <-started
	require.NoError(t, f.Dispose())
	err := <-applied
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, cause, bus.ErrDisposed)
	assert.Equal(t, bus.StateDisposed, f.State())
}

func TestRootDisposalCancelsEveryContext(t *testing.T) {
	root := bus.New()
	var inner *bus.Context
	var innerEnded, innerRefused bool
	apply(t, root.Context(), plugin("outer", func(oc *bus.Context) error {
		apply(t, oc, plugin("inner", func(ic *bus.Context) error { inner = ic; return nil }), nil)
		// Runs before the inner fiber is disposed (last in, first out), yet
		// after the request already reached the whole subtree.
		return oc.Effect(func() func() {
			return func() {
				select {
				case <-inner.Done():
					innerEnded = true
				default:
				}
				innerRefused = errors.Is(inner.Effect(func() func() { return nil }), bus.ErrDisposed)
			}
		})
	}), nil)
	rootDone := root.Context().Done()
	require.NoError(t, root.Dispose())
	<-rootDone
	assert.True(t, innerEnded, "a child learns of its ancestor's disposal at the request")
	assert.True(t, innerRefused)
	assert.ErrorIs(t, context.Cause(inner.Context()), bus.ErrDisposed)
}

func TestReloadDoesNotCancelContext(t *testing.T) {
	root := newRoot(t)
	var c *bus.Context
	f := apply(t, root.Context(), plugin("reloads", func(pc *bus.Context) error { c = pc; return nil }), nil)
	require.NoError(t, f.Update(nil))
	require.Equal(t, bus.StateActive, f.State())
	assert.NoError(t, c.Context().Err())
}

func TestDisposalDoesNotReapplyDependents(t *testing.T) {
	// Disposing the provider during the root's disposal unloads its
	// optional dependent, which must not be applied again: it is going
	// too, although its own parent is still active at that moment.
	root := bus.New()
	svc := bus.NewService[*store]("test/cache")
	tr := &trace{}
	apply(t, root.Context(), plugin("mid", func(c *bus.Context) error {
		apply(t, c, dependent(t, "user", svc, false, tr), nil)
		return nil
	}), nil)
	apply(t, root.Context(), plugin("provider", func(c *bus.Context) error {
		_, err := svc.Provide(c, &store{"redis"})
		return err
	}), nil)
	require.NoError(t, root.Dispose())
	assert.Equal(t, []string{
		"user applied with missing",
		"user disposed",
		"user applied with redis",
		"user disposed",
	}, tr.get())
}
