package fstools

import (
	"errors"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
)

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
const Name = "tools/fs"

// Config is the plugin's config.
type Config struct {
	// Root is the directory the tools are confined to. Default ".". In
	// plugins.yaml a relative root is relative to the file's directory.
	Root string `yaml:"root" vigil:"path" doc:"The directory the tools are confined to. Default '.'. In plugins.yaml a relative root is relative to the file's directory."`
	// MaxBytes bounds what read_file returns. Default 64 KiB.
	MaxBytes int `yaml:"max_bytes" doc:"Bounds what read_file returns. Default 64 KiB."`
}

// ToolNames names the tools the plugin provides, so that the loader can
// check the tool names an agent selects.
func (c *Config) ToolNames() []string { return []string{"list_dir", "read_file"} }

// Validate checks the config.
func (c *Config) Validate() error {
	if c.MaxBytes < 0 {
		return errors.New("max_bytes must not be negative")
	}
	return nil
}

// Plugin provides the list_dir and read_file tool services.
// A Go program or test may apply it with bus.Context.Plugin.
var Plugin = bus.RegisterFunc(Name, "read-only file tools list_dir and read_file, confined to a root", func(c *bus.Context, cfg Config) error {
	root := cfg.Root
	if root == "" {
		root = "."
	}
	f, err := Open(root, cfg.MaxBytes)
	if err != nil {
		return err
	}
	if err := c.Effect(func() func() { return func() { _ = f.Close() } }); err != nil {
		_ = f.Close()
		return err
	}
	for _, t := range f.Tools() {
		if _, err := agentloop.ProvideTool(c, t); err != nil {
			return err
		}
	}
	return nil
})
