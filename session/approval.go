package session

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
)

// Approval event types: a tool call that waits for a person, the person's
// answer, and the policy that decides which calls wait. See docs/log-format.md.
const (
	// TypeApprovalRequest (step scope) follows the tool/call of a call its
	// policy says to ask about; the step is suspended until every such
	// call of the step has an approval/decision.
	TypeApprovalRequest = "approval/request"
	// TypeApprovalDecision (step scope) answers one pending request, once.
	TypeApprovalDecision = "approval/decision"
	// TypeApprovalPolicy (no scope or a turn) is the policy in force from
	// here on, so that verify can evaluate every later call against it.
	TypeApprovalPolicy = "approval/policy"
)

// Policy actions (approval/policy default and rule action).
const (
	ActionAllow = "allow"
	ActionDeny  = "deny"
	ActionAsk   = "ask"
)

// Decision scopes (approval/decision scope): one call, or the call and
// every later call of the session the same request would cover.
const (
	ScopeCall    = "call"
	ScopeSession = "session"
)

// Error codes of tool results answering a call that did not run because
// of a policy or a person.
const (
	// CodePolicyDenied: the policy in force denies the call.
	CodePolicyDenied = "POLICY_DENIED"
	// CodeApprovalDenied: a person denied the call.
	CodeApprovalDenied = "APPROVAL_DENIED"
)

// ApprovalRequest is the data of approval/request: the call with id ID
// waits for a decision; By names who asked (a plugin), Reason says why.
type ApprovalRequest struct {
	ID     string `json:"id"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ValidScope reports whether scope is a decision's scope: empty (a call),
// [ScopeCall] or [ScopeSession]. A log and a decision given are checked
// by it alike.
func ValidScope(scope string) bool {
	return scope == "" || scope == ScopeCall || scope == ScopeSession
}

// ApprovalDecision is the data of approval/decision: the answer to the
// pending request of call ID. Scope is empty (a call) or [ScopeCall] or
// [ScopeSession]; Cites, when not zero, is the seq of the earlier
// session-scoped decision this one rests on.
type ApprovalDecision struct {
	ID     string `json:"id"`
	Allow  bool   `json:"allow"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	Scope  string `json:"scope,omitempty"`
	Cites  int64  `json:"cites,omitempty"`
}

// DenialMessage is the message of the APPROVAL_DENIED tool result that
// answers a call d denied: who denied it and the decision's reason, which
// the model is shown. The loop writes it and verify checks it, so a
// denial's reason in the log is the one the model saw.
func DenialMessage(d ApprovalDecision) string {
	msg := "a person denied this call"
	if d.By != "" {
		msg = d.By + " denied this call"
	}
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	return msg
}

// ApprovalPolicy is the data of approval/policy: the rules, in order
// (the first that matches a call decides it), and the action for a call
// no rule matches.
type ApprovalPolicy struct {
	By      string         `json:"by"`
	Default string         `json:"default"`
	Rules   []ApprovalRule `json:"rules,omitempty"`
}

// ApprovalRule matches calls of the tools whose name matches the
// path.Match glob Tool and, when Arguments is set, whose JSON arguments
// match the regular expression (RE2 syntax, unanchored).
type ApprovalRule struct {
	Tool      string `json:"tool"`
	Arguments string `json:"arguments,omitempty"`
	Action    string `json:"action"`
	Reason    string `json:"reason,omitempty"`
}

// ErrInvalidPolicy: an approval policy with an unknown action, a bad glob
// or a bad regular expression. It matches ErrInvalidPayload too.
var ErrInvalidPolicy error = &subError{"session: invalid payload: approval policy", ErrInvalidPayload}

// CheckPolicy reports whether p is a policy a log may carry: every action
// allow, deny or ask, every rule with a valid tool glob and an arguments
// pattern, when set, that compiles. The error matches [ErrInvalidPolicy]
// and names the rule (from 0). Matching calls against a policy is the
// approval engine's (session/approval).
func CheckPolicy(p ApprovalPolicy) error {
	_, err := PolicyPatterns(p)
	return err
}

// PolicyPatterns checks p as [CheckPolicy] does and returns its rules'
// compiled arguments patterns, by rule (nil for a rule without one): the
// engine that matches calls (session/approval) compiles a policy once.
func PolicyPatterns(p ApprovalPolicy) ([]*regexp.Regexp, error) {
	if !validAction(p.Default) {
		return nil, fmt.Errorf("%w: default %q is not allow, deny or ask", ErrInvalidPolicy, p.Default)
	}
	re := make([]*regexp.Regexp, len(p.Rules))
	for i, r := range p.Rules {
		if !validAction(r.Action) {
			return nil, fmt.Errorf("%w: rule %d: action %q is not allow, deny or ask", ErrInvalidPolicy, i, r.Action)
		}
		if r.Tool == "" {
			return nil, fmt.Errorf("%w: rule %d: no tool pattern", ErrInvalidPolicy, i)
		}
		if _, err := path.Match(r.Tool, ""); err != nil {
			return nil, fmt.Errorf("%w: rule %d: tool pattern %q: %w", ErrInvalidPolicy, i, r.Tool, err)
		}
		if r.Arguments != "" {
			var err error
			if re[i], err = regexp.Compile(r.Arguments); err != nil {
				return nil, fmt.Errorf("%w: rule %d: arguments pattern: %w", ErrInvalidPolicy, i, err)
			}
		}
	}
	return re, nil
}

func validAction(a string) bool { return a == ActionAllow || a == ActionDeny || a == ActionAsk }

// Clone returns a copy of p whose rules the caller may change.
func (p ApprovalPolicy) Clone() ApprovalPolicy {
	p.Rules = slices.Clone(p.Rules)
	return p
}

// SessionRuleBy is the by of the decision the loop logs for a call that
// an earlier allowing decision of scope session covers (see Cover in
// session/approval): the call gets its own decision, citing the one it
// rests on, so that nothing rests on memory. A person's decision may not
// use it.
const SessionRuleBy = "session-rule"

// checkApproval checks the fields of an approval payload.
func checkApproval(seq int64, typ string, p any) error {
	switch v := p.(type) {
	case ApprovalRequest:
		if v.ID == "" {
			return fmt.Errorf("%w: seq %d: %s", ErrNoCallID, seq, typ)
		}
	case ApprovalDecision:
		if v.ID == "" {
			return fmt.Errorf("%w: seq %d: %s", ErrNoCallID, seq, typ)
		}
		if !ValidScope(v.Scope) {
			return fmt.Errorf("%w: seq %d: %s scope %q is not call or session", ErrInvalidPayload, seq, typ, v.Scope)
		}
		if v.Cites < 0 || v.Cites >= seq {
			return fmt.Errorf("%w: seq %d: %s cites %d, not an earlier seq", ErrInvalidPayload, seq, typ, v.Cites)
		}
	case ApprovalPolicy:
		if err := CheckPolicy(v); err != nil {
			return fmt.Errorf("seq %d: %w", seq, err)
		}
	}
	return nil
}

// PendingCall is a call of a suspended step that has an approval/request
// and no result yet.
type PendingCall struct {
	// Call is the logged tool/call (id, tool name, arguments); CallSeq its seq.
	Call    ToolCall
	CallSeq int64
	// Request is the approval/request; RequestSeq its seq.
	Request    ApprovalRequest
	RequestSeq int64
	// Decision is the call's approval/decision, nil while undecided;
	// DecisionSeq its seq (0 while undecided).
	Decision    *ApprovalDecision
	DecisionSeq int64
}

// Suspension is the open step of a log suspended on approvals: every call
// of the step still without a result has an approval/request and has not
// started. Such a tail is not a crash: [Closers] leaves it open.
type Suspension struct {
	Turn, Step int
	// Calls are the step's pending calls in the order of their requests.
	Calls []PendingCall
	// Usage is the step's reply's usage, from the step/usage it logged
	// before it suspended (nil when none): its step/end carries it.
	Usage *Usage
}

// Undecided returns the calls that still wait for a decision.
func (s *Suspension) Undecided() []PendingCall {
	var out []PendingCall
	for _, c := range s.Calls {
		if c.Decision == nil {
			out = append(out, c)
		}
	}
	return out
}

// Ready reports whether every pending call has a decision: the step can
// resume.
func (s *Suspension) Ready() bool { return len(s.Undecided()) == 0 }

// Find returns the pending call with id, or nil.
func (s *Suspension) Find(id string) *PendingCall {
	for i := range s.Calls {
		if s.Calls[i].Call.ID == id {
			return &s.Calls[i]
		}
	}
	return nil
}

// Suspended returns the suspension of records' open step, or nil when
// the log is not suspended (no step open, a call without a request or
// already started, nothing pending). It is a pure fold of the log; the
// records of a log's [Tail] are enough.
func Suspended(records []Record) *Suspension {
	st := scanTurns(records)
	if st.step == 0 || len(st.pending) == 0 {
		return nil
	}
	for _, c := range st.pending {
		if !c.logged || c.started {
			return nil
		}
	}
	// The open step's approval events, read from its start.
	i := len(records) - 1
	for i >= 0 && !(records[i].typ == TypeStepStart && records[i].turn == st.turn && records[i].step == st.step) {
		i--
	}
	s := &Suspension{Turn: st.turn, Step: st.step, Usage: st.usage}
	for _, r := range records[i+1:] {
		switch p := r.pay().(type) {
		case ApprovalRequest:
			if st.find(p.ID) >= 0 && s.Find(p.ID) == nil {
				c := st.pending[st.find(p.ID)]
				// records may be a log's end (a Tail's): index by seq from its first.
				call, _ := records[c.source-records[0].seq].pay().(ToolCall)
				s.Calls = append(s.Calls, PendingCall{Call: call, CallSeq: c.source, Request: p, RequestSeq: r.seq})
			}
		case ApprovalDecision:
			if c := s.Find(p.ID); c != nil && c.Decision == nil {
				d := p
				c.Decision, c.DecisionSeq = &d, r.seq
			}
		}
	}
	if len(s.Calls) != len(st.pending) {
		return nil // a pending call without a request: not suspended
	}
	return s
}

// Typed errors of a decision refused (CheckDecision in session/approval),
// for callers to branch on.
var (
	// ErrNotSuspended: the log has no step waiting for decisions.
	ErrNotSuspended = errors.New("session: not suspended on an approval")
	// ErrUnknownCall: no tool call of the session has that id.
	ErrUnknownCall = errors.New("session: unknown tool call")
	// ErrNotPending: the call exists but waits for no decision (it had no
	// request, or it was answered).
	ErrNotPending = errors.New("session: tool call not pending a decision")
	// ErrAlreadyDecided: the call's request already has a decision (see
	// [DecidedError] for whose).
	ErrAlreadyDecided = errors.New("session: tool call already decided")
	// ErrInvalidDecision: a decision no person may give — a denial of
	// scope session ("always deny" is not supported: deny the call, or
	// change the policy), or one by [SessionRuleBy] or citing a decision
	// (only the loop logs those, for the calls a session-scoped allow
	// covers).
	ErrInvalidDecision = errors.New("session: invalid decision")
)

// DecidedError says that a call was already decided, and how. It also
// matches [ErrNotSuspended] or [ErrNotPending] when the decision was
// acted on since (the step resumed, the call ran or was answered): a
// second decider that lost the race is told who won, whether or not the
// winner's decision resumed the step before the loser looked.
type DecidedError struct {
	ID       string
	Decision ApprovalDecision
	Seq      int64
	// Since is nil while the step waits, else ErrNotSuspended or
	// ErrNotPending.
	Since error
}

func (e *DecidedError) Error() string {
	verb := "denied"
	if e.Decision.Allow {
		verb = "allowed"
	}
	by := e.Decision.By
	if by == "" {
		by = "someone"
	}
	return fmt.Sprintf("session: tool call %q was already %s by %s (seq %d)", e.ID, verb, by, e.Seq)
}

func (e *DecidedError) Is(target error) bool {
	return target == ErrAlreadyDecided || (e.Since != nil && target == e.Since)
}
