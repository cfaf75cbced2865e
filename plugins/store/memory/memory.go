package memory

import (
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/internal/storeplugin"
	memstore "github.com/vigil-run/vigil/session/memory"
)

// Name is the registered name of the in-memory store plugin.
const Name = "store/memory"

// Plugin is the store/memory plugin: sessions kept in memory for as long
// as the plugin lives.
var Plugin = bus.PluginFunc(Name, func(c *bus.Context, _ struct{}) error {
	_, err := storeplugin.Provide(c, memstore.New())
	return err
})

func init() {
	bus.Register(bus.Module{
		Name:        Name,
		Description: "sessions kept in memory (tests, demos)",
		New:         func() bus.Plugin { return Plugin },
	})
}
