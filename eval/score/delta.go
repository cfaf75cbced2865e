package score

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// allowance is how much worse than the recording a candidate may be:
// up to MaxRatio times the recorded value, or MaxDelta more, whichever
// allows more. With neither, no worse at all.
type allowance struct {
	ratio, delta float64
}

// judge scores candidate against recorded: 1 when it is within the
// allowance, else the allowed value's share of the candidate's, so
// twice what was allowed scores 0.5.
func (a allowance) judge(recorded, candidate float64) (score, allowed float64) {
	allowed = recorded
	if a.ratio > 0 {
		allowed = max(allowed, recorded*a.ratio)
	}
	allowed = max(allowed, recorded+a.delta)
	if candidate <= allowed {
		return 1, allowed
	}
	return allowed / candidate, allowed
}

// checkRatio checks a max_ratio: absent (0), or a finite ratio of at
// least 1 (a candidate may not be asked to do better than the recording;
// a threshold says how much worse is still fine).
func checkRatio(r float64) error {
	if r != 0 && !(r >= 1 && !math.IsInf(r, 0)) {
		return keyError("max_ratio", "%v: a ratio of 1 or more is required", r)
	}
	return nil
}

// CostConfig is the config of `cost`: the candidate's turn may cost up
// to max_ratio times the recorded turn's, or max_delta_usd more. Measure
// "usd" (the default) compares the turns' prices, which the eval knows
// only for models with a price; "tokens" compares input plus output
// tokens, known for every provider that reports usage.
type CostConfig struct {
	Bar
	MaxRatio    float64 `json:"max_ratio,omitempty"`
	MaxDeltaUSD float64 `json:"max_delta_usd,omitempty"`
	MaxTokens   int     `json:"max_delta_tokens,omitempty"`
	Measure     string  `json:"measure,omitempty"`
}

func (c *CostConfig) check() error {
	switch c.Measure {
	case "":
		c.Measure = "usd"
	case "usd", "tokens":
	default:
		return keyError("measure", "%q is not usd or tokens", c.Measure)
	}
	if err := checkRatio(c.MaxRatio); err != nil {
		return err
	}
	if !(c.MaxDeltaUSD >= 0) || math.IsInf(c.MaxDeltaUSD, 0) {
		return keyError("max_delta_usd", "%v: a finite amount of 0 or more is required", c.MaxDeltaUSD)
	}
	if c.MaxTokens < 0 {
		return keyError("max_delta_tokens", "%d is negative", c.MaxTokens)
	}
	if c.Measure == "tokens" && c.MaxDeltaUSD != 0 || c.Measure == "usd" && c.MaxTokens != 0 {
		return keyError("measure", "max_delta_usd goes with usd, max_delta_tokens with tokens")
	}
	return c.Bar.Check()
}

type cost struct{ cfg CostConfig }

func newCost(_ Env, raw json.RawMessage) (Scorer, error) {
	var cfg CostConfig
	if err := decodeChecked(raw, &cfg); err != nil {
		return nil, err
	}
	return cost{cfg}, nil
}

// ErrNoPrice is a cost scorer measuring USD over turns whose model has
// no known price: it could not score (measure tokens instead).
var ErrNoPrice = errors.New("score: cost: no price is known for these turns' models (measure: tokens compares tokens)")

func (s cost) Score(_ context.Context, p Pair) (Result, error) {
	if s.cfg.Measure == "tokens" {
		rec, cand := tokens(p.Recorded), tokens(p.Candidate)
		score, allowed := allowance{s.cfg.MaxRatio, float64(s.cfg.MaxTokens)}.judge(rec, cand)
		return s.cfg.Result(score, fmt.Sprintf("%.0f tokens, recorded %.0f, allowed %.0f", cand, rec, allowed)), nil
	}
	rec, cand := p.Recorded.CostUSD, p.Candidate.CostUSD
	if rec == 0 && cand == 0 && (tokens(p.Recorded) > 0 || tokens(p.Candidate) > 0) {
		return Result{}, ErrNoPrice
	}
	score, allowed := allowance{s.cfg.MaxRatio, s.cfg.MaxDeltaUSD}.judge(rec, cand)
	return s.cfg.Result(score, fmt.Sprintf("$%.6f, recorded $%.6f, allowed $%.6f", cand, rec, allowed)), nil
}

// tokens is what a turn's steps reported, input and output.
func tokens(t Turn) float64 { return float64(t.Usage.Input + t.Usage.Output) }

// LatencyConfig is the config of `latency`: the candidate's turn may
// take up to max_ratio times the recorded turn's wall time, or max_delta
// (a Go duration, "500ms") more.
type LatencyConfig struct {
	Bar
	MaxRatio float64 `json:"max_ratio,omitempty"`
	MaxDelta string  `json:"max_delta,omitempty"`

	delta time.Duration
}

func (c *LatencyConfig) check() error {
	if err := checkRatio(c.MaxRatio); err != nil {
		return err
	}
	if c.MaxDelta != "" {
		d, err := time.ParseDuration(c.MaxDelta)
		if err != nil || d < 0 {
			return keyError("max_delta", "%q is not a duration of 0 or more (\"500ms\", \"2s\")", c.MaxDelta)
		}
		c.delta = d
	}
	return c.Bar.Check()
}

type latency struct{ cfg LatencyConfig }

func newLatency(_ Env, raw json.RawMessage) (Scorer, error) {
	var cfg LatencyConfig
	if err := decodeChecked(raw, &cfg); err != nil {
		return nil, err
	}
	return latency{cfg}, nil
}

func (s latency) Score(_ context.Context, p Pair) (Result, error) {
	rec, cand := p.Recorded.Latency, p.Candidate.Latency
	score, allowed := allowance{s.cfg.MaxRatio, float64(s.cfg.delta)}.judge(float64(rec), float64(cand))
	return s.cfg.Result(score, fmt.Sprintf("%s, recorded %s, allowed %s", cand.Round(time.Millisecond), rec.Round(time.Millisecond), time.Duration(allowed).Round(time.Millisecond))), nil
}
