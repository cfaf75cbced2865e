package replay

import (
	"cmp"
	"context"
	"errors"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session/live"
)

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
const Name = "provider/replay"

// Config is the plugin's config: the log to replay is File or Session.
// They are two fields, not one guessed from its value, so that a file's
// path can resolve against the directory of plugins.yaml while an id
// stays an id.
type Config struct {
	// File is the path of a .jsonl log file. In plugins.yaml a relative
	// path is relative to the file's directory.
	File string `yaml:"file" vigil:"path" doc:"a .jsonl session log to replay"`
	// Session is the id of a session in the store of the sessions
	// service.
	Session string `yaml:"session" doc:"the id of a stored session to replay"`
	// Verify refuses requests whose digest differs from the recorded one.
	Verify bool `yaml:"verify" doc:"Refuses requests whose digest differs from the recorded one."`
	// Listen mounts the replay as a short-circuiting llm/stream listener
	// instead of providing the provider service.
	Listen bool `yaml:"listen" doc:"Mounts the replay as a short-circuiting llm/stream listener instead of providing the provider service."`
}

// Validate checks the config.
func (c *Config) Validate() error {
	switch {
	case c.File == "" && c.Session == "":
		return errors.New("file or session is required: a log file path or a session id")
	case c.File != "" && c.Session != "":
		return errors.New("file and session are exclusive: replay one log")
	}
	return nil
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
		if cfg.File != "" {
			rec, err = Load(cfg.File)
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
					c.Logger().Error("replay incomplete", "session", cmp.Or(cfg.File, cfg.Session), "error", err)
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
