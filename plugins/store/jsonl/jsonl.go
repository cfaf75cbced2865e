package jsonl

import (
	"errors"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/internal/storeplugin"
	"github.com/vigil-run/vigil/session"
	jsonlstore "github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// Name is the registered name of the JSONL store plugin, as plugins.yaml
// and vigil.Plugin spell it.
const Name = "store/jsonl"

// DefaultDir is where store/jsonl keeps sessions when no dir is given.
const DefaultDir = ".vigil/sessions"

// Config is the config of store/jsonl.
type Config struct {
	// Dir holds one <session id>.jsonl file per session; it is created
	// when missing. Default .vigil/sessions. In plugins.yaml a relative
	// dir is relative to the file's directory.
	Dir string `yaml:"dir" vigil:"path" doc:"Holds one <session id>.jsonl file per session; it is created when missing. Default .vigil/sessions. In plugins.yaml a relative dir is relative to the file's directory."`
	// Retention deletes the sessions older than max_age (by their last
	// record), run by vigil serve and vigil sessions prune.
	Retention session.Retention `yaml:"retention" doc:"Deletes the sessions older than max_age (by their last record), run by vigil serve and vigil sessions prune."`
	// Signing names the key that signs the sessions' checkpoints, and
	// whether every session must be signed.
	Signing live.Signing `yaml:"signing" doc:"The key that signs the sessions' checkpoints, and whether every session must be signed."`
}

// Validate checks the config.
func (c *Config) Validate() error {
	return errors.Join(c.Retention.Validate(), storeplugin.ValidateSigning(c.Signing))
}

// Plugin is the store/jsonl plugin: one JSONL log file per session.
// A Go program or test may apply it with bus.Context.Plugin.
var Plugin = bus.RegisterFunc(Name, "sessions as one JSONL log file each, in a directory", func(c *bus.Context, cfg Config) error {
	dir := cfg.Dir
	if dir == "" {
		dir = DefaultDir
	}
	store, err := jsonlstore.Open(dir)
	if err != nil {
		return err
	}
	if _, err = storeplugin.Provide(c, store, cfg.Signing); err != nil {
		return err
	}
	return storeplugin.ProvideRetention(c, cfg.Retention)
})
