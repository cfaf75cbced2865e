package budget

import (
	"context"
	"time"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
)

// Plugin is the registered plugin; it reads the time from the system
// clock.
var Plugin = bus.RegisterFunc(Name, "limits: token, cost and wall-clock budgets per turn and session, repeated tool calls; caps max_tokens to what remains", apply(time.Now))

// WithClock returns the plugin reading the time from now, for a program
// or a test that controls the clock its session records are stamped with.
func WithClock(now func() time.Time) bus.Plugin {
	return bus.PluginFunc(Name, apply(now))
}

func apply(now func() time.Time) func(*bus.Context, Config) error {
	return func(c *bus.Context, cfg Config) error {
		agentloop.StepBegin.On(c, func(_ context.Context, s *agentloop.StepCheck) error {
			capTo, err := cfg.Check(s.Session.Records(), s.Turn, s.Model, now())
			if err != nil {
				c.Logger().Info("step refused", "session", s.Session.ID(), "turn", s.Turn, "step", s.Step, "reason", err)
				return err
			}
			if capTo > 0 {
				s.Cap(capTo)
			}
			return nil
		})
		return nil
	}
}
