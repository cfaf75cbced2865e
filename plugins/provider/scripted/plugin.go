package scripted

import (
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
)

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
const Name = "provider/scripted"

// Plugin provides a scripted [Provider] as the provider service.
// A Go program or test may apply it with bus.Context.Plugin.
var Plugin = bus.RegisterFunc(Name, "a deterministic scripted model for demos and tests (no network, no key)", func(c *bus.Context, cfg Config) error {
	p, err := New(cfg)
	if err != nil {
		return err
	}
	_, err = agentloop.ProviderService.Provide(c, p)
	return err
})
