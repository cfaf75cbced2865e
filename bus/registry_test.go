package bus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

// The registry is process-wide and registration happens at init time, as
// built-in plugins do it; the tests only read it (so -count works).
var registered = bus.Module{
	Name:        "test/registry-found",
	Description: "found",
	Config:      func() any { return &greeting{} },
	New:         func() bus.Plugin { return &bus.Func[greeting]{ID: "test/registry-found"} },
}

func init() {
	bus.Register(registered)
	bus.Register(bus.Module{Name: "test/registry-other", New: registered.New})
}

func TestRegisteredModuleIsFoundByName(t *testing.T) {
	m := registered
	got, ok := bus.LookupModule(m.Name)
	require.True(t, ok)
	assert.Equal(t, "found", got.Description)
	assert.Equal(t, m.Name, got.New().Name())
	_, ok = bus.LookupModule("test/registry-missing")
	assert.False(t, ok)
	names := []string{}
	for _, m := range bus.Modules() {
		names = append(names, m.Name)
	}
	assert.Contains(t, names, m.Name)
	assert.IsIncreasing(t, names)
}

func TestRegisteringModuleTwicePanics(t *testing.T) {
	assert.Panics(t, func() { bus.Register(registered) })
}

func TestRegisteringIncompleteModulePanics(t *testing.T) {
	assert.Panics(t, func() { bus.Register(bus.Module{Name: "test/no-constructor"}) })
	assert.Panics(t, func() { bus.Register(bus.Module{New: func() bus.Plugin { return nil }}) })
}

// One statement registers a plugin and gives the package the plugin to
// export.
var (
	registeredFunc = bus.RegisterFunc("test/registerfunc", "typed", func(*bus.Context, limits) error { return nil })
	registeredNone = bus.RegisterFunc("test/registerfunc-none", "no config", func(*bus.Context, struct{}) error { return nil },
		bus.Requires(bus.NewService[int]("test/needed")))
	registeredPtr = bus.RegisterFunc("test/registerfunc-ptr", "pointer config", func(*bus.Context, *limits) error { return nil })
)

func TestRegisterFuncRegistersAModule(t *testing.T) {
	cases := []struct {
		plugin     bus.Plugin
		desc       string
		wantConfig any // nil: the module takes no config
	}{
		{registeredFunc, "typed", &limits{}},
		{registeredNone, "no config", nil},
		{registeredPtr, "pointer config", &limits{}},
	}
	for _, tc := range cases {
		t.Run(tc.plugin.Name(), func(t *testing.T) {
			m, ok := bus.LookupModule(tc.plugin.Name())
			require.True(t, ok)
			assert.Equal(t, tc.desc, m.Description)
			assert.Same(t, tc.plugin, m.New())
			if tc.wantConfig == nil {
				assert.Nil(t, m.Config)
				return
			}
			require.NotNil(t, m.Config)
			assert.Equal(t, tc.wantConfig, m.Config())
			assert.NotSame(t, m.Config(), m.Config(), "each entry decodes into a config of its own")
		})
	}
	assert.Equal(t, bus.Inject{Required: []bus.ServiceKey{bus.NewService[int]("test/needed")}}, registeredNone.Inject())
	assert.Panics(t, func() {
		bus.RegisterFunc("test/registerfunc", "again", func(*bus.Context, struct{}) error { return nil })
	})
}

// The module's own plugin refuses an invalid config, applied by hand.
func TestRegisteredPluginValidatesWhenAppliedByHand(t *testing.T) {
	root := newRoot(t)
	_, err := root.Context().Plugin(registeredFunc, &limits{})
	assert.ErrorIs(t, err, errNoLimit)
}
