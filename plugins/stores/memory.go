package stores

import (
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session/memory"
)

// MemoryName is the registered name of the in-memory store plugin.
const MemoryName = "store/memory"

// Memory is the store/memory plugin: sessions kept in memory for as long
// as the plugin lives.
var Memory = bus.PluginFunc(MemoryName, func(c *bus.Context, _ struct{}) error {
	_, err := Provide(c, memory.New())
	return err
})

func init() {
	bus.Register(bus.Module{
		Name:        MemoryName,
		Description: "sessions kept in memory (tests, demos)",
		New:         func() bus.Plugin { return Memory },
	})
}
