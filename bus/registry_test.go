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
	bus.Register(bus.Module{Name: "test/registry-elsewhere", New: registered.New, Package: "example.com/elsewhere"})
}

func TestRegisterRecordsTheRegisteringPackage(t *testing.T) {
	for name, want := range map[string]string{
		// Registered from this test package's init.
		"test/registry-found": "github.com/vigil-run/vigil/bus_test",
		// A package given by the module is kept.
		"test/registry-elsewhere": "example.com/elsewhere",
	} {
		m, ok := bus.LookupModule(name)
		require.True(t, ok, name)
		assert.Equal(t, want, m.Package, name)
	}
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
