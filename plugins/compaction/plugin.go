package compaction

import (
	"context"
	"errors"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
)

// Plugin is the compaction plugin: it compacts before each turn, on
// agent/prepare, with the provider of the turn about to run.
// A Go program or test may apply it with bus.Context.Plugin.
var Plugin = bus.RegisterFunc(Name, "summarizes older history between turns when a session grows past a threshold", func(c *bus.Context, cfg Config) error {
	k, err := New(c, cfg)
	if err != nil {
		return err
	}
	agentloop.TurnPrepare.On(c, func(ctx context.Context, p *agentloop.Prepare) error {
		res, err := k.Compact(ctx, p.Session, p.Provider, p.Header)
		switch {
		case err != nil && ctx.Err() != nil:
			return errors.Join(err, ctx.Err())
		case err != nil:
			// The turn runs uncompacted rather than not at all.
			c.Logger().Warn("compaction failed", "session", p.Session.ID(), "error", err)
		case res != nil:
			c.Logger().Debug("compacted", "session", p.Session.ID(), "start", res.Start, "end", res.End, "events", len(res.Shadowed))
		}
		return nil
	})
	return nil
})
