package stores

import (
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session/jsonl"
)

// JSONLName is the registered name of the JSONL store plugin.
const JSONLName = "store/jsonl"

// DefaultDir is where store/jsonl keeps sessions when no dir is given.
const DefaultDir = ".vigil/sessions"

// JSONLConfig is the config of store/jsonl.
type JSONLConfig struct {
	// Dir holds one <session id>.jsonl file per session; it is created
	// when missing. Default .vigil/sessions.
	Dir string `yaml:"dir"`
}

// JSONL is the store/jsonl plugin: one JSONL log file per session.
var JSONL = bus.RegisterFunc(JSONLName, "sessions as one JSONL log file each, in a directory", func(c *bus.Context, cfg JSONLConfig) error {
	dir := cfg.Dir
	if dir == "" {
		dir = DefaultDir
	}
	store, err := jsonl.Open(dir)
	if err != nil {
		return err
	}
	_, err = Provide(c, store)
	return err
})
