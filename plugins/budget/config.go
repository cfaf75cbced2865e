package budget

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Name is the plugin's registered name.
const Name = "budget"

// DefaultMaxRepeats is how many times a turn may call the same tool with
// byte-identical arguments when Config.MaxRepeats is zero.
const DefaultMaxRepeats = 3

// Config is the plugin's config. A zero limit is no limit.
type Config struct {
	// Session limits what the whole session (every turn of its log) may spend.
	Session Limits `yaml:"session" doc:"Limits what the whole session (every turn of its log) may spend."`
	// Turn limits what one turn may spend, and how long it may run.
	Turn TurnLimits `yaml:"turn" doc:"Limits what one turn may spend, and how long it may run."`
	// MaxRepeats: a turn that called the same tool with byte-identical
	// arguments this many times ends before its next request (default 3;
	// -1: no limit).
	MaxRepeats int `yaml:"max_repeats" doc:"identical tool calls a turn may make before it ends (default 3, -1: no limit)"`
	// Prices gives each model's price, by the model name the request
	// header names; `vigil sessions show` reads it too, for cost.
	Prices map[string]Price `yaml:"prices" doc:"Gives each model's price, by the model name the request header names; 'vigil sessions show' reads it too, for cost."`
}

// Limits are token and cost limits.
type Limits struct {
	// Tokens bounds input plus output tokens, as step/end usage logs them.
	Tokens int `yaml:"tokens" doc:"input plus output tokens (0: no limit)"`
	// Cost bounds the cost in USD, from Prices.
	Cost float64 `yaml:"cost" doc:"USD, priced by the prices table (0: no limit)"`
}

// TurnLimits are a turn's limits.
type TurnLimits struct {
	Tokens int     `yaml:"tokens" doc:"input plus output tokens per turn (0: no limit)"`
	Cost   float64 `yaml:"cost" doc:"USD per turn (0: no limit)"`
	// WallClock bounds how long a turn runs: a step does not start later
	// than this after the turn's turn/start.
	WallClock time.Duration `yaml:"wall_clock" doc:"how long a turn may run before its next step is refused (0: no limit)"`
}

// Price is a model's price in USD per million tokens.
type Price struct {
	Input  float64 `yaml:"input" doc:"USD per million input tokens"`
	Output float64 `yaml:"output" doc:"USD per million output tokens"`
}

// Cost is the price of in input and out output tokens.
func (p Price) Cost(in, out int) float64 {
	return (float64(in)*p.Input + float64(out)*p.Output) / 1e6
}

// Validate refuses negative limits and prices.
func (c *Config) Validate() error {
	var errs []error
	nonNeg := func(name string, v float64) {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("%s must be a non-negative number, not %v", name, v))
		}
	}
	nonNeg("session.tokens", float64(c.Session.Tokens))
	nonNeg("session.cost", c.Session.Cost)
	nonNeg("turn.tokens", float64(c.Turn.Tokens))
	nonNeg("turn.cost", c.Turn.Cost)
	if c.Turn.WallClock < 0 {
		errs = append(errs, fmt.Errorf("turn.wall_clock must not be negative, not %v", c.Turn.WallClock))
	}
	if c.MaxRepeats < -1 {
		errs = append(errs, fmt.Errorf("max_repeats must be -1 (no limit), 0 (the default, %d) or more, not %d", DefaultMaxRepeats, c.MaxRepeats))
	}
	for model, p := range c.Prices {
		nonNeg("prices."+model+".input", p.Input)
		nonNeg("prices."+model+".output", p.Output)
	}
	return errors.Join(errs...)
}

func (c *Config) maxRepeats() int {
	if c.MaxRepeats == 0 {
		return DefaultMaxRepeats
	}
	return c.MaxRepeats
}

// PricesOf returns the price table of a budget entry's config (a Config
// or a *Config, as a composition holds it), nil for anything else: what
// a host prices a log's usage with ([Tally]), as the plugin does.
func PricesOf(cfg any) map[string]Price {
	switch c := cfg.(type) {
	case *Config:
		if c != nil {
			return c.Prices
		}
	case Config:
		return c.Prices
	}
	return nil
}
