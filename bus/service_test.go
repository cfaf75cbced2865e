package bus_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

type store struct{ name string }

// dependent returns a plugin reading svc (required or optional) that
// records each value it was applied with ("missing" when absent) and each
// disposal in tr.
func dependent(t *testing.T, name string, svc bus.Service[*store], required bool, tr *trace) bus.Plugin {
	deps := bus.Inject{Optional: []bus.ServiceKey{svc}}
	if required {
		deps = bus.Inject{Required: []bus.ServiceKey{svc}}
	}
	return &bus.Func[struct{}]{ID: name, Deps: deps, Run: func(c *bus.Context, _ struct{}) error {
		got := "missing"
		s, err := svc.Get(c)
		switch {
		case err == nil:
			got = s.name
		case !required:
			require.ErrorIs(t, err, bus.ErrServiceMissing)
		default:
			return err
		}
		tr.add(name + " applied with " + got)
		effect(t, c, tr, name+" disposed")
		return nil
	}}
}

func TestRequiredServiceDefersApplyUntilProvided(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/db")
	tr := &trace{}
	f := apply(t, root.Context(), dependent(t, "user", svc, true, tr), nil)
	assert.Equal(t, bus.StatePending, f.State())
	assert.Empty(t, tr.get())
	_, err := svc.Provide(root.Context(), &store{"pg"})
	require.NoError(t, err)
	assert.Equal(t, bus.StateActive, f.State())
	assert.Equal(t, []string{"user applied with pg"}, tr.get())
}

func TestOptionalServiceDoesNotDeferApply(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/cache")
	tr := &trace{}
	f := apply(t, root.Context(), dependent(t, "user", svc, false, tr), nil)
	assert.Equal(t, bus.StateActive, f.State())
	assert.Equal(t, []string{"user applied with missing"}, tr.get())
}

func TestRequiredServiceCountsOnlyOnceProviderIsActive(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/db")
	tr := &trace{}
	user := apply(t, root.Context(), dependent(t, "user", svc, true, tr), nil)
	apply(t, root.Context(), plugin("provider", func(c *bus.Context) error {
		if _, err := svc.Provide(c, &store{"pg"}); err != nil {
			return err
		}
		// Provided, but the provider is still loading.
		assert.Equal(t, bus.StatePending, user.State())
		assert.Equal(t, []bus.Waiting{{Plugin: "user", Missing: []string{svc.Name()}}}, c.Root().Pending())
		return nil
	}), nil)
	assert.Equal(t, bus.StateActive, user.State())
}

func TestServiceOfFailedProviderNeverAppears(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/db")
	tr := &trace{}
	user := apply(t, root.Context(), dependent(t, "user", svc, true, tr), nil)
	_, err := root.Context().Plugin(plugin("provider", func(c *bus.Context) error {
		if _, err := svc.Provide(c, &store{"pg"}); err != nil {
			return err
		}
		return errBoom
	}), nil)
	require.ErrorIs(t, err, errBoom)
	assert.Equal(t, bus.StatePending, user.State())
	// The name is free again.
	_, err = svc.Provide(root.Context(), &store{"other"})
	require.NoError(t, err)
	assert.Equal(t, bus.StateActive, user.State())
}

func TestWithdrawnRequiredServiceDisposesDependentsFirstAndReappliesThem(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/db")
	var available []bool
	applies := 0
	user := &bus.Func[struct{}]{ID: "user", Deps: bus.Inject{Required: []bus.ServiceKey{svc}}, Run: func(c *bus.Context, _ struct{}) error {
		applies++
		return c.Effect(func() func() {
			return func() {
				// Dependents are disposed while the service still exists.
				_, err := svc.Get(c)
				available = append(available, err == nil)
			}
		})
	}}
	f := apply(t, root.Context(), user, nil)
	withdraw, err := svc.Provide(root.Context(), &store{"pg"})
	require.NoError(t, err)
	require.Equal(t, bus.StateActive, f.State())

	withdraw()
	assert.Equal(t, []bool{true}, available)
	assert.Equal(t, bus.StatePending, f.State())
	_, err = svc.Get(root.Context())
	assert.ErrorIs(t, err, bus.ErrServiceMissing)

	_, err = svc.Provide(root.Context(), &store{"pg2"})
	require.NoError(t, err)
	assert.Equal(t, bus.StateActive, f.State())
	assert.Equal(t, 2, applies)
}

func TestReplacedRequiredServiceReappliesDependentsWithNewValue(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/db")
	tr := &trace{}
	apply(t, root.Context(), dependent(t, "user", svc, true, tr), nil)
	provider := apply(t, root.Context(), bus.PluginFunc("provider", func(c *bus.Context, name string) error {
		_, err := svc.Provide(c, &store{name})
		return err
	}), "v1")
	require.NoError(t, provider.Update("v2"))
	assert.Equal(t, []string{
		"user applied with v1",
		"user disposed",
		"user applied with v2",
	}, tr.get())
}

func TestDependentCleanupFinishesBeforeProviderCleanup(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/db")
	tr := &trace{}
	apply(t, root.Context(), dependent(t, "user", svc, true, tr), nil)
	provider := apply(t, root.Context(), plugin("provider", func(c *bus.Context) error {
		effect(t, c, tr, "provider closes db")
		_, err := svc.Provide(c, &store{"pg"})
		return err
	}), nil)
	require.NoError(t, provider.Dispose())
	assert.Equal(t, []string{"user applied with pg", "user disposed", "provider closes db"}, tr.get())
}

func TestOptionalServiceChangeReloadsDependent(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/cache")
	tr := &trace{}
	f := apply(t, root.Context(), dependent(t, "user", svc, false, tr), nil)
	withdraw, err := svc.Provide(root.Context(), &store{"redis"})
	require.NoError(t, err)
	withdraw()
	assert.Equal(t, []string{
		"user applied with missing",
		"user disposed",
		"user applied with redis",
		"user disposed",
		"user applied with missing",
	}, tr.get())
	assert.Equal(t, bus.StateActive, f.State())
}

func TestProvidingServiceTwiceFails(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/db")
	_, err := svc.Provide(root.Context(), &store{"a"})
	require.NoError(t, err)
	_, err = root.Context().Plugin(plugin("second", func(c *bus.Context) error {
		_, err := svc.Provide(c, &store{"b"})
		return err
	}), nil)
	assert.ErrorIs(t, err, bus.ErrServiceDuplicate)
	got, err := svc.Get(root.Context())
	require.NoError(t, err)
	assert.Equal(t, "a", got.name)
}

func TestReadingUndeclaredServiceFails(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/db")
	tools := bus.NewService[int]("test/tool/a")
	_, err := svc.Provide(root.Context(), &store{"pg"})
	require.NoError(t, err)
	_, err = tools.Provide(root.Context(), 1)
	require.NoError(t, err)
	_, err = root.Context().Plugin(plugin("sneaky", func(c *bus.Context) error {
		if _, err := svc.Get(c); err != nil {
			return err
		}
		return nil
	}), nil)
	assert.ErrorIs(t, err, bus.ErrServiceUndeclared)
	_, err = root.Context().Plugin(plugin("sneaky-lookup", func(c *bus.Context) error {
		_, err := bus.Lookup[int](c, "test/tool/")
		return err
	}), nil)
	assert.ErrorIs(t, err, bus.ErrServiceUndeclared)
}

func TestLookupListsServicesByPrefix(t *testing.T) {
	root := newRoot(t)
	for _, n := range []string{"test/tool/b", "test/tool/a", "test/other"} {
		_, err := bus.NewService[int](n).Provide(root.Context(), len(n))
		require.NoError(t, err)
	}
	var got []bus.Named[int]
	apply(t, root.Context(), &bus.Func[struct{}]{
		ID:   "tools",
		Deps: bus.Inject{Optional: []bus.ServiceKey{bus.NewServiceSet[int]("test/tool/")}},
		Run: func(c *bus.Context, _ struct{}) error {
			var err error
			got, err = bus.Lookup[int](c, "test/tool/")
			return err
		},
	}, nil)
	assert.Equal(t, []bus.Named[int]{{Name: "test/tool/a", Value: 11}, {Name: "test/tool/b", Value: 11}}, got)
}

func TestPendingListsWhatWaitingPluginsMiss(t *testing.T) {
	root := newRoot(t)
	db := bus.NewService[*store]("test/db")
	cache := bus.NewService[*store]("test/cache")
	_, err := cache.Provide(root.Context(), &store{"redis"})
	require.NoError(t, err)
	apply(t, root.Context(), &bus.Func[struct{}]{ID: "both", Deps: bus.Inject{Required: []bus.ServiceKey{db, cache}}}, nil)
	apply(t, root.Context(), &bus.Func[struct{}]{ID: "cached", Deps: bus.Inject{Required: []bus.ServiceKey{cache}}}, nil)
	apply(t, root.Context(), &bus.Func[struct{}]{ID: "db", Deps: bus.Inject{Required: []bus.ServiceKey{db}, Optional: []bus.ServiceKey{bus.NewService[any]("test/x")}}}, nil)
	assert.Equal(t, []bus.Waiting{
		{Plugin: "both", Missing: []string{"test/db"}},
		{Plugin: "db", Missing: []string{"test/db"}},
	}, root.Pending())
}

func TestServiceOfWrongTypeIsAnError(t *testing.T) {
	root := newRoot(t)
	_, err := bus.NewService[int]("test/typed").Provide(root.Context(), 1)
	require.NoError(t, err)
	_, err = bus.NewService[string]("test/typed").Get(root.Context())
	assert.ErrorIs(t, err, bus.ErrConfigType)
}

func TestPendingIsSafeDuringConcurrentLoads(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[*store]("test/db")
	for i := range 20 {
		apply(t, root.Context(), &bus.Func[struct{}]{ID: fmt.Sprint("user", i), Deps: bus.Inject{Required: []bus.ServiceKey{svc}}}, nil)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(root.Pending()) > 0 {
			runtime.Gosched()
		}
	}()
	_, err := svc.Provide(root.Context(), &store{"pg"})
	require.NoError(t, err)
	<-done
	assert.Empty(t, root.Pending())
}
