package bus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

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
