package approval

import (
	"fmt"

	"github.com/vigil-run/vigil/session"
)

// CheckDecision returns the event that records decision d for call id of
// records, or why it cannot be given: [session.ErrNotSuspended],
// [session.ErrUnknownCall], [session.ErrNotPending], a
// [*session.DecidedError] (also when the decision was acted on since) or
// [session.ErrInvalidDecision] (also for a scope that is not one, see
// [session.ValidScope]). d.ID is set to id.
func CheckDecision(records []session.Record, id string, d session.ApprovalDecision) (session.Event, error) {
	switch {
	case !session.ValidScope(d.Scope):
		return session.Event{}, fmt.Errorf("%w: %q: scope %q is not call or session", session.ErrInvalidDecision, id, d.Scope)
	case d.Scope == session.ScopeSession && !d.Allow:
		return session.Event{}, fmt.Errorf("%w: %q: a denial cannot have scope session (\"always deny\" is not supported: deny this call, or add a deny rule to the policy)", session.ErrInvalidDecision, id)
	case d.By == session.SessionRuleBy || d.Cites != 0:
		return session.Event{}, fmt.Errorf("%w: %q: decisions by %q, citing a session-scoped allow, are logged by the loop only", session.ErrInvalidDecision, id, session.SessionRuleBy)
	}
	s := session.Suspended(records)
	if s == nil {
		if !callExists(records, id) {
			return session.Event{}, fmt.Errorf("%w: %q", session.ErrUnknownCall, id)
		}
		if de := decidedBefore(records, id); de != nil {
			de.Since = session.ErrNotSuspended
			return session.Event{}, de
		}
		return session.Event{}, fmt.Errorf("%w: %q", session.ErrNotSuspended, id)
	}
	c := s.Find(id)
	switch {
	case c == nil && !callExists(records, id):
		return session.Event{}, fmt.Errorf("%w: %q", session.ErrUnknownCall, id)
	case c == nil:
		if de := decidedBefore(records, id); de != nil {
			de.Since = session.ErrNotPending
			return session.Event{}, de
		}
		return session.Event{}, fmt.Errorf("%w: %q", session.ErrNotPending, id)
	case c.Decision != nil:
		return session.Event{}, &session.DecidedError{ID: id, Decision: *c.Decision, Seq: c.DecisionSeq}
	}
	d.ID = id
	return session.Event{Type: session.TypeApprovalDecision, Turn: s.Turn, Step: s.Step, Data: d}, nil
}

// decidedBefore returns the error naming the decision of call id in
// records, nil when it has none.
func decidedBefore(records []session.Record, id string) *session.DecidedError {
	for _, r := range records {
		if r.Type() != session.TypeApprovalDecision {
			continue
		}
		if d, err := session.DecodeData[session.ApprovalDecision](r); err == nil && d.ID == id {
			return &session.DecidedError{ID: id, Decision: d, Seq: r.Seq()}
		}
	}
	return nil
}

func callExists(records []session.Record, id string) bool {
	for _, r := range records {
		if r.Type() != session.TypeToolCall {
			continue
		}
		if c, err := session.DecodeData[session.ToolCall](r); err == nil && c.ID == id {
			return true
		}
	}
	return false
}
