package openai

import (
	"errors"
	"fmt"
	"time"

	"github.com/vigil-run/vigil/plugins/internal/providerhttp"
)

// DefaultBaseURL is the OpenAI API, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Config configures the provider. It is decoded strictly from the
// plugin's entry in plugins.yaml.
type Config struct {
	// BaseURL is the API root including the version segment, like
	// "http://localhost:11434/v1" for Ollama. Empty means OpenAI.
	BaseURL string `yaml:"base_url" doc:"API root with version, e.g. http://localhost:11434/v1; empty means OpenAI"`
	// APIKey is sent as a bearer token. It may be empty for local
	// servers, but not for OpenAI itself.
	APIKey string `yaml:"api_key" doc:"bearer token; may be empty for local servers"`
	// Model is used when the request header names none.
	Model string `yaml:"model" vigil:"required" doc:"model used when the agent names none"`
	// StreamIdleTimeout ends a reply whose response sends nothing for this
	// long, with an error that ends the step; zero means
	// providerhttp.DefaultStreamIdleTimeout (5m).
	StreamIdleTimeout time.Duration `yaml:"stream_idle_timeout" doc:"ends a reply whose response sends nothing for this long (default 5m)"`
	// MaxResponseBytes ends a reply whose response body grows past this
	// many bytes, with an error that ends the step; zero means
	// providerhttp.DefaultMaxResponseBytes (64 MiB).
	MaxResponseBytes int64 `yaml:"max_response_bytes" doc:"ends a reply whose response body grows past this many bytes (default 64 MiB)"`
}

// limits returns the bounds of one response.
func (c *Config) limits() providerhttp.Limits {
	return providerhttp.Limits{Idle: c.StreamIdleTimeout, MaxBytes: c.MaxResponseBytes}
}

// ErrConfig is the error class of an invalid [Config].
var ErrConfig = errors.New("invalid config")

// Validate reports a missing model, an unusable base URL, or a missing
// key for the OpenAI API.
func (c *Config) Validate() error {
	if c.Model == "" {
		return fmt.Errorf("%w: model is required (for example gpt-4o-mini)", ErrConfig)
	}
	if err := providerhttp.CheckLimits(c.StreamIdleTimeout, c.MaxResponseBytes); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.BaseURL == "" {
		if c.APIKey == "" {
			return fmt.Errorf("%w: api_key is required for the OpenAI API; set base_url for a local server", ErrConfig)
		}
		return nil
	}
	if err := providerhttp.CheckBaseURL(c.BaseURL); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}
