package budget

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// Limit names, the Limit of the [*agentloop.BudgetError] a refusal is.
const (
	LimitSessionTokens = "session.tokens"
	LimitSessionCost   = "session.cost"
	LimitTurnTokens    = "turn.tokens"
	LimitTurnCost      = "turn.cost"
	LimitWallClock     = "turn.wall_clock"
	LimitRepeats       = "max_repeats"
	// LimitPrice: a cost limit is set and the step's model has no price.
	LimitPrice = "prices"
)

// Check decides step of turn, about to start on the log records with
// model, at now: a [*agentloop.BudgetError] refuses it; otherwise
// maxTokens is what remains of the tightest token or cost limit, as a
// bound on the reply (0: no bound). Everything it reads is in the log
// (step/end usage, the headers' models, tool/call arguments, the
// turn/start's time) or in c, so the log explains each decision.
func (c *Config) Check(records []session.Record, turn int, model string, now time.Time) (maxTokens int, err error) {
	acc := Tally(records, c.Prices)
	ses := acc.Session
	var cur Spent
	if n := len(acc.Turns); n > 0 && acc.Turns[n-1].Turn == turn {
		cur = acc.Turns[n-1].Spent
	}
	price, priced := c.Prices[model]
	if (c.Session.Cost > 0 || c.Turn.Cost > 0) && !priced {
		return 0, refuse(LimitPrice, "budget: a cost limit is set and model %q has no price (prices in the budget plugin's config)", model)
	}
	remain := math.MaxInt
	tokens := func(limit string, scope string, s Spent, max int) error {
		if max <= 0 {
			return nil
		}
		if s.Tokens() >= max {
			return refuse(limit, "budget: the %s's tokens are spent: %d of %d", scope, s.Tokens(), max)
		}
		remain = min(remain, max-s.Tokens())
		return nil
	}
	cost := func(limit string, scope string, s Spent, max float64) error {
		if max <= 0 {
			return nil
		}
		if s.cost >= max {
			return refuse(limit, "budget: the %s's cost is spent: $%s of $%s", scope, usd(s.cost), usd(max))
		}
		if price.Output > 0 {
			// The nudge keeps a float error from costing a whole token
			// (869.9999… for 870).
			remain = min(remain, int(math.Floor((max-s.cost)*1e6/price.Output+1e-9)))
		}
		return nil
	}
	for _, f := range []func() error{
		func() error { return tokens(LimitSessionTokens, "session", ses, c.Session.Tokens) },
		func() error { return cost(LimitSessionCost, "session", ses, c.Session.Cost) },
		func() error { return tokens(LimitTurnTokens, "turn", cur, c.Turn.Tokens) },
		func() error { return cost(LimitTurnCost, "turn", cur, c.Turn.Cost) },
		func() error { return c.wallClock(records, turn, now) },
		func() error { return c.repeats(records, turn) },
	} {
		if err := f(); err != nil {
			return 0, err
		}
	}
	if remain == math.MaxInt {
		return 0, nil
	}
	return max(remain, 1), nil
}

func (c *Config) wallClock(records []session.Record, turn int, now time.Time) error {
	limit := c.Turn.WallClock
	if limit <= 0 {
		return nil
	}
	for i := len(records) - 1; i >= 0; i-- {
		r := records[i]
		if r.Type() == session.TypeTurnStart && r.Turn() == turn {
			if ran := now.Sub(r.Time()); ran >= limit {
				return refuse(LimitWallClock, "budget: turn %d has run %v, its wall-clock limit is %v", turn, ran.Round(time.Millisecond), limit)
			}
			return nil
		}
	}
	return nil
}

func (c *Config) repeats(records []session.Record, turn int) error {
	limit := c.maxRepeats()
	if limit < 0 {
		return nil
	}
	type key struct{ name, args string }
	n := map[key]int{}
	var order []key // first seen, in log order
	for i := len(records) - 1; i >= 0 && records[i].Turn() == turn; i-- {
		r := records[i]
		if r.Type() != session.TypeToolCall {
			continue
		}
		call, err := session.DecodeData[session.ToolCall](r)
		if err != nil {
			continue
		}
		k := key{call.Name, call.Arguments}
		if n[k] == 0 {
			order = append(order, k)
		}
		n[k]++
	}
	for i := len(order) - 1; i >= 0; i-- {
		if k := order[i]; n[k] >= limit {
			return refuse(LimitRepeats, "budget: %s was called %d times with the same arguments in this turn (max_repeats %d)", k.name, n[k], limit)
		}
	}
	return nil
}

func refuse(limit, format string, args ...any) error {
	return &agentloop.BudgetError{Limit: limit, Message: fmt.Sprintf(format, args...)}
}

// usd formats dollars to a millionth, without trailing zeros.
func usd(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}
