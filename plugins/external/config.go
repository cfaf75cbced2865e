package external

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-run/vigil/plugins/internal/yamljson"
)

// DefaultTimeout bounds each call to the plugin when Config.Timeout is
// zero, and its start when Config.StartTimeout is zero too.
const DefaultTimeout = 10 * time.Second

// Failure modes of Config.Fail: what becomes of the events a plugin
// validates when it cannot be consulted.
const (
	// FailClosed (the default) refuses them: a policy that cannot be
	// consulted lets nothing through, while its entry is applied again
	// and once its process has crashed, until a process is ready again.
	FailClosed = "closed"
	// FailOpen lets them through (logged): for plugins that may be lost
	// without stopping the sessions they watch.
	FailOpen = "open"
)

// Config configures one external plugin.
type Config struct {
	// Path is the plugin executable. In plugins.yaml a relative path is
	// relative to the file's directory.
	Path string `yaml:"path" vigil:"required,path" doc:"the plugin executable"`
	// SHA256, when set, is the hex SHA-256 of the executable; a binary
	// with another checksum is not started, and the process runs a private
	// copy of the very bytes that were checked.
	SHA256 string `yaml:"sha256" doc:"hex SHA-256 the executable must have"`
	// Args are the process's arguments after the path, handed over as
	// written.
	Args []string `yaml:"args" doc:"arguments after the path"`
	// Env lists the environment the plugin gets: "NAME" passes the host's
	// value of NAME (when set), "NAME=value" sets one. Nothing else of the
	// host's environment reaches the plugin.
	Env []string `yaml:"env" doc:"allow-list: NAME passes the host's value, NAME=value sets one"`
	// Config is handed to the plugin as JSON.
	Config any `yaml:"config" doc:"the plugin's own config, passed as JSON"`
	// Timeout bounds every call to the plugin (default 10s).
	Timeout time.Duration `yaml:"timeout" doc:"bounds every call (default 10s)"`
	// StartTimeout bounds the start: the process, the handshake and the
	// describe, configure and list-tools calls (default: the larger of
	// Timeout and 10s). Starting takes longer than answering, so a short
	// Timeout does not make the start fail on a busy machine.
	StartTimeout time.Duration `yaml:"start_timeout" doc:"bounds the start (default: the larger of timeout and 10s)"`
	// Fail is FailClosed (the default) or FailOpen.
	Fail string `yaml:"fail" enum:"closed,open" doc:"closed (default): events the plugin validates are refused while it cannot be consulted (reloading, crashed); open: they pass"`

	// entryID is the plugins.yaml id of the entry, set by the config
	// loader through SetEntryID; errors name it.
	entryID string
}

// SetEntryID records the id of the plugins.yaml entry the config belongs
// to (the config loader calls it), so that errors name the entry.
func (c *Config) SetEntryID(id string) { c.entryID = id }

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
	if c.StartTimeout < 0 {
		errs = append(errs, errors.New("start_timeout must not be negative"))
	}
	if c.Fail != "" && c.Fail != FailClosed && c.Fail != FailOpen {
		errs = append(errs, fmt.Errorf("fail must be %q or %q, got %q", FailClosed, FailOpen, c.Fail))
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

func (c *Config) startTimeout() time.Duration {
	if c.StartTimeout > 0 {
		return c.StartTimeout
	}
	return max(c.timeout(), DefaultTimeout)
}

func (c *Config) failOpen() bool { return c.Fail == FailOpen }

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
