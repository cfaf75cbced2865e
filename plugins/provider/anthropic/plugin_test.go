package anthropic

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; empty means valid
	}{
		{"anthropic", Config{APIKey: "sk-ant-x", Model: "claude-sonnet-4-5"}, ""},
		{"proxy without key", Config{BaseURL: "http://localhost:4000", Model: "claude-sonnet-4-5"}, ""},
		{"missing model", Config{APIKey: "sk-ant-x"}, "model is required"},
		{"anthropic without key", Config{Model: "claude-sonnet-4-5"}, "api_key is required"},
		{"negative max_tokens", Config{APIKey: "k", Model: "m", MaxTokens: -1}, "max_tokens must not be negative"},
		{"base url without scheme", Config{BaseURL: "localhost:4000", Model: "m"}, "base_url must be an http or https URL"},
		{"base url with an empty port", Config{BaseURL: "http://localhost:/v1", Model: "m"}, "base_url has a colon but no port"},
		{"ipv6 base url with an empty port", Config{BaseURL: "http://[::1]:/v1", Model: "m"}, "base_url has a colon but no port"},
		{"ipv6 base url with a port", Config{BaseURL: "http://[::1]:11434/v1", Model: "m"}, ""},
		{"base url with port zero", Config{BaseURL: "http://localhost:0/v1", Model: "m"}, "port must be between 1 and 65535"},
		{"base url with a port out of range", Config{BaseURL: "http://localhost:70000/v1", Model: "m"}, "port must be between 1 and 65535"},
		{"base url with a port but no host", Config{BaseURL: "http://:8080/v1", Model: "m"}, "base_url must be an http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrConfig)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestModuleIsRegistered(t *testing.T) {
	m, ok := bus.LookupModule(Name)
	require.True(t, ok)
	assert.NotEmpty(t, m.Description)
	assert.IsType(t, &Config{}, m.Config())
}

func TestPluginProvidesProvider(t *testing.T) {
	root := bus.New()
	defer root.Dispose()
	m, _ := bus.LookupModule(Name)

	f, err := root.Context().Plugin(m.New(), &Config{APIKey: "sk-ant-x", Model: "claude-sonnet-4-5"})
	require.NoError(t, err)
	p, err := agentloop.ProviderService.Get(root.Context())
	require.NoError(t, err)
	// The service holds the provider inside agentloop's wrapper.
	assert.Equal(t, providerName, p.(agentloop.Namer).Name())

	require.NoError(t, f.Dispose())
	_, err = agentloop.ProviderService.Get(root.Context())
	assert.ErrorIs(t, err, bus.ErrServiceMissing, "disposing the plugin withdraws the provider")
}

func TestPluginRefusesInvalidConfig(t *testing.T) {
	root := bus.New()
	defer root.Dispose()
	for _, cfg := range []any{nil, &Config{APIKey: "sk-ant-x"}} {
		_, err := root.Context().Plugin(Plugin(), cfg)
		assert.ErrorIs(t, err, ErrConfig)
		assert.ErrorContains(t, err, "model is required")
		_, err = agentloop.ProviderService.Get(root.Context())
		assert.ErrorIs(t, err, bus.ErrServiceMissing)
	}
}
