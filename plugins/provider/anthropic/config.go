package anthropic

import (
	"errors"
	"fmt"
	"time"

	"github.com/vigil-run/vigil/plugins/internal/providerhttp"
)

const (
	// DefaultBaseURL is the Anthropic API, used when Config.BaseURL is
	// empty.
	DefaultBaseURL = "https://api.anthropic.com/"
	// DefaultMaxTokens caps a reply when neither the request header nor
	// the config sets max_tokens, which the API requires.
	DefaultMaxTokens = 1024
)

// Config configures the provider. It is decoded strictly from the
// plugin's entry in plugins.yaml.
type Config struct {
	// BaseURL is the API root without the version segment (requests go
	// to BaseURL + "v1/messages"). Empty means Anthropic.
	BaseURL string `yaml:"base_url" doc:"API root without /v1; empty means Anthropic"`
	// APIKey authenticates requests. It may be empty only for a server
	// other than Anthropic's (a local proxy, say).
	APIKey string `yaml:"api_key" doc:"API key; required unless base_url is set"`
	// Model is used when the request header names none.
	Model string `yaml:"model" vigil:"required" doc:"model used when the agent names none"`
	// MaxTokens is used when the request header sets none; zero means
	// DefaultMaxTokens.
	MaxTokens int `yaml:"max_tokens" doc:"reply cap when the agent sets none (default 1024)"`
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

// Validate reports a missing model, an unusable base URL or max_tokens,
// or a missing key for the Anthropic API.
func (c *Config) Validate() error {
	if c.Model == "" {
		return fmt.Errorf("%w: model is required (for example claude-sonnet-4-5)", ErrConfig)
	}
	if c.MaxTokens < 0 {
		return fmt.Errorf("%w: max_tokens must not be negative", ErrConfig)
	}
	if err := providerhttp.CheckLimits(c.StreamIdleTimeout, c.MaxResponseBytes); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.BaseURL == "" {
		if c.APIKey == "" {
			return fmt.Errorf("%w: api_key is required for the Anthropic API", ErrConfig)
		}
		return nil
	}
	if err := providerhttp.CheckBaseURL(c.BaseURL); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}
