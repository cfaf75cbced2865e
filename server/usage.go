package server

import (
	"net/http"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/budget"
)

// TurnUsage is one turn's usage and cost.
type TurnUsage struct {
	Turn   int `json:"turn"`
	Input  int `json:"input"`
	Output int `json:"output"`
	// CostUSD is set when the composition's budget entry prices every
	// model the turn's steps asked for.
	CostUSD *float64 `json:"cost_usd"`
	// Unpriced names the models the price table has no price for.
	Unpriced []string `json:"unpriced,omitempty"`
	// Steps counts the turn's steps.
	Steps int `json:"steps"`
}

// Usage is what GET /v1/sessions/{id}/usage answers: the tally `vigil
// sessions show` reports (budget.Tally), priced by the budget entry of
// the server's composition. Total includes the one-shots (a compaction's
// summary), which are in no turn; Turn is 0 there.
type Usage struct {
	Session  string      `json:"session"`
	Turns    []TurnUsage `json:"turns"`
	OneShots TurnUsage   `json:"oneshots"`
	Total    TurnUsage   `json:"total"`
}

func (s *Server) handleUsage(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	info := admitted(r)
	st, err := s.readStored(r, info)
	if err != nil {
		return 0, nil, err
	}
	acc := budget.Tally(st.log.Records, s.prices())
	steps := map[int]int{}
	total := 0
	for _, ref := range stepsOf(st) {
		steps[ref.Turn]++
		total++
	}
	out := Usage{Session: info.ID, Turns: make([]TurnUsage, 0, len(acc.Turns)),
		OneShots: usageOf(0, acc.OneShots, 0), Total: usageOf(0, acc.Session, total)}
	for _, t := range acc.Turns {
		out.Turns = append(out.Turns, usageOf(t.Turn, t.Spent, steps[t.Turn]))
	}
	return http.StatusOK, out, nil
}

func usageOf(turn int, s budget.Spent, steps int) TurnUsage {
	return TurnUsage{Turn: turn, Input: s.Input, Output: s.Output, CostUSD: s.Cost, Unpriced: s.Unpriced, Steps: steps}
}

// prices is the price table of the composition's budget entry, nil when
// it has none.
func (s *Server) prices() map[string]budget.Price {
	comp := s.rt.Composition()
	if comp == nil || comp.File() == nil {
		return nil
	}
	c, _ := config.Find(comp.File().Entries, budget.Name)
	return budget.PricesOf(c)
}
