package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session/live"
)

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
const Name = "provider/replay"

// Config is the plugin's config.
type Config struct {
	// Session is the log to replay: a path to a .jsonl log file, or the id
	// of a session in the store of the sessions service.
	Session string `yaml:"session"`
	// Verify refuses requests whose digest differs from the recorded one.
	Verify bool `yaml:"verify"`
	// Listen mounts the replay as a short-circuiting llm/stream listener
	// instead of providing the provider service.
	Listen bool `yaml:"listen"`
}

// Validate checks the config.
func (c *Config) Validate() error {
	if c.Session == "" {
		return errors.New("session is required: a log file path or a session id")
	}
	return nil
}

// isPath reports whether s names a file rather than a session id.
func isPath(s string) bool {
	if strings.HasSuffix(s, ".jsonl") || strings.ContainsRune(s, filepath.Separator) || strings.ContainsRune(s, '/') {
		return true
	}
	_, err := os.Stat(s)
	return err == nil
}

// Plugin is the provider/replay plugin. It reads a session id from the
// store of the sessions service, when one is provided.
// A Go program or test may apply it with bus.Context.Plugin.
var Plugin = bus.RegisterFunc(Name, "serves the model streams recorded in a session log (no model, no key)",
	func(c *bus.Context, cfg Config) error {
		var (
			rec *Recording
			err error
		)
		if isPath(cfg.Session) {
			rec, err = Load(cfg.Session)
		} else {
			mgr, gerr := live.Sessions.Get(c)
			if gerr != nil {
				return errors.Join(errors.New("replay: a session id needs the sessions service"), gerr)
			}
			rec, err = LoadSession(context.Background(), mgr.Store(), cfg.Session)
		}
		if err != nil {
			return err
		}
		p := New(rec)
		p.Verify = cfg.Verify
		if err := c.Effect(func() func() {
			return func() {
				if err := p.Check(); err != nil {
					c.Logger().Error("replay incomplete", "session", cfg.Session, "error", err)
				}
			}
		}); err != nil {
			return err
		}
		if cfg.Listen {
			Listen(c, p)
			return nil
		}
		_, err = agentloop.ProviderService.Provide(c, p)
		return err
	},
	bus.Optional(live.Sessions),
)
