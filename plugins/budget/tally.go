package budget

import (
	"math"
	"slices"

	"github.com/vigil-run/vigil/session"
)

// Spent is the usage model calls logged (each step's step/end usage, each
// one-shot's request/usage) and its cost.
type Spent struct {
	Input  int `json:"input"`
	Output int `json:"output"`
	// Cost is the cost in USD: set when a price table was given and
	// every step with usage had a price for its model.
	Cost *float64 `json:"cost,omitempty"`
	// Unpriced names the models of steps the price table has no price
	// for (with a table): their usage has no cost.
	Unpriced []string `json:"unpriced,omitempty"`

	cost float64 // of the priced steps
}

// Tokens is input plus output.
func (s Spent) Tokens() int { return s.Input + s.Output }

func (s *Spent) add(u session.Usage, model string, prices map[string]Price) {
	s.Input += u.Input
	s.Output += u.Output
	if prices == nil {
		return
	}
	if p, ok := prices[model]; ok {
		s.cost += p.Cost(u.Input, u.Output)
	} else if !slices.Contains(s.Unpriced, model) {
		s.Unpriced = append(s.Unpriced, model)
	}
}

func (s *Spent) settle(prices map[string]Price) {
	if prices != nil && len(s.Unpriced) == 0 {
		// Rounded to a billionth of a dollar: the sums of float products
		// would print as 2.7000000000000004e-05.
		c := math.Round(s.cost*1e9) / 1e9
		s.Cost = &c
	}
}

// TurnSpent is one turn's spending.
type TurnSpent struct {
	Turn int `json:"turn"`
	Spent
}

// Account is a session's spending: in all, per turn, and of the
// one-shots (a compaction's summary), which are outside turns.
type Account struct {
	Session  Spent
	Turns    []TurnSpent
	OneShots Spent
}

// Tally adds up the usage of every model call in records — each step/end's
// and each request/usage's (a one-shot's) — in all, per turn (every turn
// that started, in order) and for the one-shots, pricing each step by the
// model of the request header in force at it and each one-shot by the
// model of its own header. prices may be nil: no cost.
func Tally(records []session.Record, prices map[string]Price) Account {
	var acc Account
	model := ""
	idx := map[int]int{}        // turn → index in acc.Turns
	shots := map[int64]string{} // request/oneshot seq → its model
	for _, r := range records {
		switch r.Type() {
		case session.TypeRequestHeader:
			if h, err := session.DecodeData[session.RequestHeader](r); err == nil {
				model = h.Header.Model
			}
		case session.TypeRequestOneshot:
			if o, err := session.DecodeData[session.Oneshot](r); err == nil && o.Header != nil {
				shots[r.Seq()] = o.Header.Model
			} else {
				shots[r.Seq()] = ""
			}
		case session.TypeRequestUsage:
			u, err := session.DecodeData[session.Usage](r)
			if err != nil || len(r.Sources()) == 0 {
				continue
			}
			m := shots[r.Sources()[0]]
			acc.Session.add(u, m, prices)
			acc.OneShots.add(u, m, prices)
		case session.TypeTurnStart:
			if _, ok := idx[r.Turn()]; !ok {
				idx[r.Turn()] = len(acc.Turns)
				acc.Turns = append(acc.Turns, TurnSpent{Turn: r.Turn()})
			}
		case session.TypeStepEnd:
			e, err := session.DecodeData[session.StepEnd](r)
			if err != nil || e.Usage == nil {
				continue
			}
			acc.Session.add(*e.Usage, model, prices)
			if i, ok := idx[r.Turn()]; ok {
				acc.Turns[i].add(*e.Usage, model, prices)
			}
		}
	}
	acc.Session.settle(prices)
	acc.OneShots.settle(prices)
	for i := range acc.Turns {
		acc.Turns[i].settle(prices)
	}
	return acc
}
