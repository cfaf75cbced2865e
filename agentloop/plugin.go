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
		a := New(c, cfg, WithName(PluginName))
		if err := c.Effect(func() func() {
			return func() {
				if err := a.Close(); err != nil {
					c.Logger().Error("closing agent", "agent", a.ID(), "error", err)
				}
			}
		}); err != nil {
			return err
		}
		_, err := AgentService.Provide(c, a)
		return err
	},
	bus.Requires(live.Sessions, ProviderService),
	bus.Optional(ToolServices),
)
