package invariants

import (
	"fmt"
	"strings"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Rule ids: a [Violation]'s Rule, as `vigil verify` prints it and the
// invariant/violation event carries it, for monitors and tests that
// branch on which rule broke.
const (
	RuleSeqOrder              = "seq-order"
	RuleTurnNesting           = "turn-nesting"
	RuleStepNesting           = "step-nesting"
	RuleStepScope             = "step-scope"
	RuleToolPairing           = "tool-pairing"
	RuleTurnEnclosure         = "turn-enclosure"
	RuleSurfaceReplace        = "surface-replace"
	RuleAssistantAssembly     = "assistant-assembly"
	RuleStaging               = "staging"
	RuleStatusTransition      = "status-transition"
	RuleRequestReconstruction = "request-reconstruction"
	RuleRequestHeader         = "request-header"
	RuleOrphanedToolResult    = "orphaned-tool-result"
	RuleRequestDigest         = "request-digest"
	// RuleApprovalBeforeRun: no tool runs without the decision its
	// approval request, or the approval policy in force, required.
	RuleApprovalBeforeRun = "approval-before-run"
	// RuleToolRetry: a tool/retry retries, before the first step of a
	// continuation, a call whose only result is TOOL_OUTCOME_UNKNOWN
	// and that is not reconciled, citing that result.
	RuleToolRetry = "tool-retry"
	// RuleToolReconcile: a tool/reconcile settles, once, a call whose
	// only result is TOOL_OUTCOME_UNKNOWN, citing it (and, in a
	// continuation, before its first step, the call's tool/retry).
	RuleToolReconcile = "tool-reconcile"
)

// Code is the code of every [InvariantError], for a caller that reports
// a refusal by its code as it reports tool and plugin errors.
const Code = "INVARIANT"

// Violation is one broken rule.
type Violation struct {
	// Rule is the rule id.
	Rule string `json:"rule"`
	// Session is the session id, or the agent id for status-transition.
	Session string `json:"session,omitempty"`
	// Seq is the offending event's seq, or -1.
	Seq int64 `json:"seq"`
	// Index is the offending message index in a request, or -1.
	Index int `json:"index"`
	// Message says what is wrong.
	Message string `json:"message"`
	// Expected and Actual are bounded excerpts around the first divergence.
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual,omitempty"`
}

func (v *Violation) String() string {
	var b strings.Builder
	b.WriteString(v.Rule)
	switch {
	case v.Seq >= 0:
		fmt.Fprintf(&b, " seq=%d", v.Seq)
	case v.Index >= 0:
		fmt.Fprintf(&b, " message=%d", v.Index)
	}
	b.WriteString(": ")
	b.WriteString(v.Message)
	if v.Expected != "" || v.Actual != "" {
		fmt.Fprintf(&b, " (expected %s, actual %s)", v.Expected, v.Actual)
	}
	return b.String()
}

// InvariantError is the error a strict-mode refusal returns. Reach it with
// errors.As; its Code is always "INVARIANT".
type InvariantError struct {
	Code string
	Violation
}

// Is makes every InvariantError match [agentloop.ErrInvariant]: a turn
// whose append the plugin refuses ends with reason "error" (a broken
// contract is a bug), not "blocked" as for a policy's veto.
func (e *InvariantError) Is(target error) bool { return target == agentloop.ErrInvariant }

func (e *InvariantError) Error() string {
	s := "invariant " + e.Violation.String()
	if e.Session != "" {
		s += " [session " + e.Session + "]"
	}
	return s
}

// ViolationEvent is the invariant/violation event emitted in warn mode,
// for a monitor of warn mode (nothing built in listens).
var ViolationEvent = bus.NewEvent[*Violation]("invariant/violation")

// Excerpts are bounded so a violation on a huge request stays readable.
const (
	maxExcerpt = 160
)

// cut bounds s to maxExcerpt bytes on a rune boundary.
func cut(s string) string { return session.Excerpt(s, maxExcerpt) }

func quote(s string) string { return fmt.Sprintf("%q", cut(s)) }

func violation(rule string, seq int64, format string, args ...any) *Violation {
	return &Violation{Rule: rule, Seq: seq, Index: -1, Message: fmt.Sprintf(format, args...)}
}
