package openai

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
		{"openai", Config{APIKey: "sk-x", Model: "gpt-4o-mini"}, ""},
		{"ollama without key", Config{BaseURL: "http://localhost:11434/v1", Model: "llama3.2"}, ""},
		{"deepseek", Config{BaseURL: "https://api.deepseek.com", APIKey: "sk-x", Model: "deepseek-chat"}, ""},
		{"missing model", Config{APIKey: "sk-x"}, "model is required"},
		{"openai without key", Config{Model: "gpt-4o-mini"}, "api_key is required"},
		{"base url without scheme", Config{BaseURL: "localhost:11434/v1", Model: "m"}, "base_url must be an http or https URL"},
		{"base url with other scheme", Config{BaseURL: "ftp://example.com", Model: "m"}, "base_url must be"},
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

func TestConfigErrorDoesNotEchoBaseURL(t *testing.T) {
	err := (&Config{BaseURL: "sk-secret-pasted-in-the-wrong-field", Model: "m"}).Validate()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "sk-secret")
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

	f, err := root.Context().Plugin(m.New(), &Config{BaseURL: "http://localhost:11434/v1", Model: "llama3.2"})
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
	tests := []struct {
		name string
		cfg  any
		want string
	}{
		{"missing model", &Config{BaseURL: "http://localhost:11434/v1"}, "model is required"},
		{"no config at all", nil, "model is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := root.Context().Plugin(Plugin(), tt.cfg)
			assert.ErrorIs(t, err, ErrConfig)
			assert.ErrorContains(t, err, tt.want)
			_, err = agentloop.ProviderService.Get(root.Context())
			assert.ErrorIs(t, err, bus.ErrServiceMissing)
		})
	}
}
