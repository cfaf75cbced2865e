package bus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

func TestRegisteredModuleIsFoundByName(t *testing.T) {
	m := bus.Module{
		Name:        "test/registry-found",
		Description: "found",
		Config:      func() any { return &greeting{} },
		New:         func() bus.Plugin { return &bus.Func[greeting]{ID: "test/registry-found"} },
	}
	bus.Register(m)
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
	m := bus.Module{Name: "test/registry-twice", New: func() bus.Plugin { return nil }}
	bus.Register(m)
	assert.Panics(t, func() { bus.Register(m) })
}

func TestRegisteringIncompleteModulePanics(t *testing.T) {
	assert.Panics(t, func() { bus.Register(bus.Module{Name: "test/no-constructor"}) })
	assert.Panics(t, func() { bus.Register(bus.Module{New: func() bus.Plugin { return nil }}) })
}
