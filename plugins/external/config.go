package external

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-run/vigil/plugins/internal/yamljson"
)

// DefaultTimeout bounds each call to the plugin, and its start, when
// Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures one external plugin.
type Config struct {
	// Path is the plugin executable.
	Path string `yaml:"path" vigil:"required" doc:"the plugin executable"`
	// SHA256, when set, is the hex SHA-256 of the executable; a binary
	// with another checksum is not started.
	SHA256 string `yaml:"sha256" doc:"hex SHA-256 the executable must have"`
	// Args are the process's arguments after the path.
	Args []string `yaml:"args" doc:"arguments after the path"`
	// Env lists the environment the plugin gets: "NAME" passes the host's
	// value of NAME (when set), "NAME=value" sets one. Nothing else of the
	// host's environment reaches the plugin.
	Env []string `yaml:"env" doc:"allow-list: NAME passes the host's value, NAME=value sets one"`
	// Config is handed to the plugin as JSON.
	Config any `yaml:"config" doc:"the plugin's own config, passed as JSON"`
	// Timeout bounds the start of the plugin and every call to it
	// (default 10s).
	Timeout time.Duration `yaml:"timeout" doc:"bounds the start and every call (default 10s)"`
}

// Validate checks the config.
func (c *Config) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("path is required"))
	}
	if c.SHA256 != "" {
		if b, err := hex.DecodeString(c.SHA256); err != nil || len(b) != 32 {
			errs = append(errs, fmt.Errorf("sha256 must be 64 hex digits, got %q", c.SHA256))
		}
	}
	for _, e := range c.Env {
		name, _, _ := strings.Cut(e, "=")
		if name == "" {
			errs = append(errs, fmt.Errorf("env entry %q has no name", e))
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, errors.New("timeout must not be negative"))
	}
	if _, err := c.configJSON(); err != nil {
		errs = append(errs, fmt.Errorf("config: %w", err))
	}
	return errors.Join(errs...)
}

func (c *Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// configJSON encodes the plugin's config as JSON. YAML decoders may give
// maps with non-string keys; those become strings.
func (c *Config) configJSON() ([]byte, error) {
	return yamljson.Marshal(c.Config)
}

// environ returns the plugin's environment from the allow-list.
func (c *Config) environ(lookup func(string) (string, bool)) []string {
	var out []string
	for _, e := range c.Env {
		if strings.Contains(e, "=") {
			out = append(out, e)
			continue
		}
		if v, ok := lookup(e); ok {
			out = append(out, e+"="+v)
		}
	}
	return out
}
