package agentloop

import (
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session/live"
)

// StepCheck is the payload of agent/step ([StepBegin]), which the loop
// emits before each step of a turn, before the step's step/start is
// logged. It is the seam for limits: a listener may refuse the step by
// returning a [*BudgetError] (the turn ends with reason budget, nothing
// of the step logged), and may lower the step's max_tokens with
// [StepCheck.Cap]. A capped max_tokens goes into the header the step
// logs (request/header, reason change, when it differs from the logged
// one), so the request stays the header in force plus the fold, and
// request/digest and `vigil verify` cover it. Any other listener error
// ends the turn with reason error.
//
// A listener must decide from the log (usage, tool calls, record times)
// and its own config, so that what it did is explained by the log.
type StepCheck struct {
	// Agent is the id of the agent running the turn.
	Agent   string
	Session *live.Session
	// Turn and Step number the step about to start.
	Turn, Step int
	// Model is the model the step's request will name.
	Model string

	maxTokens int
}

// Subject implements bus.Subjecter: the event is about the session.
func (s *StepCheck) Subject() any { return s.Session.ID() }

// MaxTokens is the max_tokens the step's request will carry: the
// agent's, or less when a listener capped it; 0 means unbounded.
func (s *StepCheck) MaxTokens() int { return s.maxTokens }

// Cap lowers the step's max_tokens to n (at least 1). It never raises
// it: the lowest cap of all listeners wins.
func (s *StepCheck) Cap(n int) {
	n = max(n, 1)
	if s.maxTokens == 0 || n < s.maxTokens {
		s.maxTokens = n
	}
}

// StepBegin is the agent/step event, emitted before each step of a turn
// (also of a resumed or continued one), for plugins that limit turns
// (budget).
var StepBegin = bus.NewEvent[*StepCheck]("agent/step")

// BudgetError refuses a step from an agent/step listener: the turn ends
// before the step's request with reason budget, and Message as turn/end's
// error. The loop logs it as the listener gave it, whoever listened, so a
// replay that refuses the same step with the recorded message logs the
// same record.
type BudgetError struct {
	// Limit names the limit that was reached ("session.tokens",
	// "turn.wall_clock", …).
	Limit string
	// Message says what was spent, in the turn/end's error.
	Message string
}

func (e *BudgetError) Error() string { return e.Message }
