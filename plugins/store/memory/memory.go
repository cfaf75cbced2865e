package memory

import (
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/internal/storeplugin"
	"github.com/vigil-run/vigil/session/live"
	memstore "github.com/vigil-run/vigil/session/memory"
)

// Name is the registered name of the in-memory store plugin, as
// plugins.yaml and vigil.Plugin spell it.
const Name = "store/memory"

// Plugin is the store/memory plugin: sessions kept in memory for as long
// as the plugin lives.
// A Go program or test may apply it with bus.Context.Plugin.
var Plugin = bus.RegisterFunc(Name, "sessions kept in memory (tests, demos)", func(c *bus.Context, _ struct{}) error {
	_, err := storeplugin.Provide(c, memstore.New(), live.Signing{})
	return err
})
