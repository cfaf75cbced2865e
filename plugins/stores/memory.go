package stores

import (
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session/memory"
)

// MemoryName is the registered name of the in-memory store plugin.
const MemoryName = "store/memory"

// Memory is the store/memory plugin: sessions kept in memory for as long
// as the plugin lives.
var Memory = bus.RegisterFunc(MemoryName, "sessions kept in memory (tests, demos)", func(c *bus.Context, _ struct{}) error {
	_, err := Provide(c, memory.New())
	return err
})
