package openai

import (
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/internal/providerhttp"
)

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
const Name = "provider/openai"

// plugin is the registered plugin; [Plugin] hands it out.
var plugin = bus.RegisterFunc(Name, "model provider for OpenAI and OpenAI-compatible servers (DeepSeek, Ollama, vLLM, llama.cpp)", run)

// Plugin returns the provider/openai plugin. Applied with a *Config (or
// Config), it validates it and provides the provider as
// [agentloop.ProviderService], withdrawn when the plugin is disposed.
func Plugin() bus.Plugin {
	return plugin
}

func run(c *bus.Context, cfg Config) error {
	p, err := New(cfg, providerhttp.WithLogger(c.Logger()))
	if err != nil {
		return err
	}
	if _, err := agentloop.ProviderService.Provide(c, p); err != nil {
		return err
	}
	c.Logger().Debug("provider ready", "model", cfg.Model, "host", providerhttp.LogHost(cfg.BaseURL, DefaultBaseURL))
	return nil
}
