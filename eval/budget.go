package eval

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/budget"
	"github.com/vigil-run/vigil/session"
)

// ErrBudget is the error of a live call the suite's budget refuses.
var ErrBudget = errors.New("eval: the suite's budget is spent")

// spend counts the run's live calls against the suite's budget: a call
// is refused once the calls, tokens or cost reached their bound.
type spend struct {
	limit  Budget
	prices map[string]budget.Price

	mu     sync.Mutex
	calls  int
	tokens int
	cost   float64
}

// Spent is what a run's live calls used.
type Spent struct {
	Calls  int     `json:"calls"`
	Tokens int     `json:"tokens"`
	Cost   float64 `json:"cost_usd"`
}

func (s *spend) spent() Spent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Spent{Calls: s.calls, Tokens: s.tokens, Cost: round(s.cost)}
}

// take counts one call, or refuses it.
func (s *spend) take() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.limit
	switch {
	case l.Calls > 0 && s.calls >= l.Calls:
		return fmt.Errorf("%w: %d live calls", ErrBudget, l.Calls)
	case l.Tokens > 0 && s.tokens >= l.Tokens:
		return fmt.Errorf("%w: %d tokens", ErrBudget, l.Tokens)
	case l.Cost > 0 && s.cost >= l.Cost:
		return fmt.Errorf("%w: $%g", ErrBudget, l.Cost)
	}
	s.calls++
	return nil
}

// exhausted reports whether the next call would be refused.
func (s *spend) exhausted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.limit
	return l.Calls > 0 && s.calls >= l.Calls || l.Tokens > 0 && s.tokens >= l.Tokens || l.Cost > 0 && s.cost >= l.Cost
}

func (s *spend) used(model string, u session.Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens += u.Input + u.Output
	if p, ok := s.prices[model]; ok {
		s.cost += p.Cost(u.Input, u.Output)
	}
}

// listen counts every request that reaches it on c's llm/stream: mounted
// before the reruns prepend their own handlers, it sees only the
// requests they pass on, the live ones (and the judge's). live, when
// set, is told each counted request's session.
func (s *spend) listen(c *bus.Context, live func(session string)) func() {
	return agentloop.LLMStream.On(c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
		if err := s.take(); err != nil {
			return nil, err
		}
		if live != nil {
			live(req.Session)
		}
		st, err := next(ctx, req)
		if err != nil {
			return nil, err
		}
		model := req.Header.Model
		return func(yield func(agentloop.Chunk, error) bool) {
			var last *session.Usage
			defer func() {
				if last != nil {
					s.used(model, *last)
				}
			}()
			for c, err := range st {
				if c.Usage != nil {
					u := *c.Usage
					last = &u
				}
				if !yield(c, err) {
					return
				}
			}
		}, nil
	}, bus.Prepend)
}
