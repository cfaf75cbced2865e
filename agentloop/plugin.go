package agentloop

import (
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session/live"
)

// PluginName is the registered name of the agent plugin, as plugins.yaml and
// vigil.Plugin spell it.
const PluginName = "agent"

// Plugin is the agent plugin: it runs the loop with the provider service
// and every tool service, and provides [AgentService]. It requires the
// "session/manager" and "llm/provider" services and reads "tool/*" at
// each step, so tools may come and go without reloading it; a tool change
// shows in the next step's request/header (reason change).
// A Go program or test may apply it with bus.Context.Plugin.
var Plugin = bus.RegisterFunc(PluginName, "the agent loop: turns and steps over the provider and every tool",
	func(c *bus.Context, cfg Config) error {
		name := PluginName
		if cfg.entry != "" && cfg.entry != PluginName {
			name = cfg.entry
		}
		var opts []Option
		if id := cfg.Provider.Name; id != "" {
			opts = append(opts, withProviderEntry(c, id))
		}
		a := New(c, cfg, append(opts, WithName(name))...)
		if err := c.Effect(func() func() {
			return func() {
				if err := a.Close(); err != nil {
					c.Logger().Error("closing agent", "agent", a.ID(), "error", err)
				}
			}
		}); err != nil {
			return err
		}
		return provideAgent(c, a)
	},
	bus.Requires(live.Sessions, ProviderService),
	bus.Optional(ToolServices, providerEntries),
)
