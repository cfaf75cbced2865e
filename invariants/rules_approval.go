package invariants

import (
	"fmt"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/approval"
)

// approvals is what approval-before-run knows of a session's log.
type approvals struct {
	policy *approval.Matcher // the policy in force, nil when none was logged
	calls  map[string]*approvalCall
	// owed are the open step's calls the policy asks about or denies
	// that have neither a request nor a result yet: the loop logs one
	// right after the call, before the step's next call, start or end.
	owed []string
	// asked are the open step's calls with an approval/request.
	asked []string
	// sessionScoped are the allowing decisions with scope session, by
	// seq, which later decisions of the calls they cover may cite.
	sessionScoped map[int64]approval.Cover
	free          []approvalCall // see newCall
}

type approvalCall struct {
	policy string // the action of the policy in force at its tool/call
	// call and matcher are the call and the policy in force at it; cover
	// is set at its request.
	call      session.ToolCall
	matcher   *approval.Matcher
	cover     *approval.Cover // nil until its request: most calls have none
	requested bool
	decided   bool
	allow     bool
	started   bool
	answered  bool
	// denial is the decision that denied the call (who and why), which
	// its APPROVAL_DENIED result must state.
	denial session.ApprovalDecision
}

func newApprovals() approvals {
	return approvals{calls: map[string]*approvalCall{}, sessionScoped: map[int64]approval.Cover{}}
}

// approvalBeforeRun: a tool/start for a call with an approval/request
// follows an allowing approval/decision for it; a decision answers a
// pending request of its step, once, while the step is suspended (every
// call of the step without a result has a request); no request for a call
// already decided, started or answered; a call the policy in force asks
// about or denies has a request or a result before the step's next call,
// start or end, and one it asks about or denies never starts without an
// allowing decision; a decided call runs (or is answered denied) only
// once every request of its step has a decision; a request by the
// policy's author is one the policy asks for; an APPROVAL_DENIED result
// answers a call someone denied, and says who and why as the decision
// does (session.DenialMessage); no denial has scope session; a decision
// that cites one is by session-rule and cites an allowing decision of
// scope session that covers its call (approval.Cover), and a decision by
// session-rule cites one — such a decision needs no suspension (the loop
// logs it right after the request), but its call, like any decided one,
// runs only once every request of its step has a decision. Each record
// type is checked by its own step below, named for what it holds.
func approvalBeforeRun(t *trace, r session.Record) *Violation {
	switch r.Type() {
	case session.TypeToolCall, session.TypeStepEnd:
		return requestOwed(t, r)
	case session.TypeToolStart:
		return startApproved(t, r)
	case session.TypeToolResult:
		return denialAnswered(t, r)
	case session.TypeApprovalRequest:
		return requestFits(t, r)
	case session.TypeApprovalDecision:
		return decisionFits(t, r)
	}
	return nil
}

// requestOwed: before the step's next call or its end, every call the
// policy in force asks about or denies has a request or a result.
func requestOwed(t *trace, r session.Record) *Violation {
	if a := &t.appr; len(a.owed) > 0 && t.stepOpen {
		return violation(RuleApprovalBeforeRun, r.Seq(), "call %q, which the approval policy in force asks about or denies, has neither an approval/request nor a result before the %s", a.owed[0], r.Type())
	}
	return nil
}

// startApproved: a call starts once every other call of its step owed a
// request has one, and only if it was allowed: by a decision when it was
// asked about, once every request of its step has one, else by the
// policy in force.
func startApproved(t *trace, r session.Record) *Violation {
	s, err := payload[session.ToolStart](&t.dec, r)
	if err != nil {
		return nil // tool-pairing reports it
	}
	a := &t.appr
	for _, id := range a.owed {
		if id != s.ID {
			return violation(RuleApprovalBeforeRun, r.Seq(), "call %q, which the approval policy in force asks about or denies, has neither an approval/request nor a result before the tool/start of %q", id, s.ID)
		}
	}
	c := a.calls[s.ID]
	switch {
	case c == nil:
	case c.requested && !c.decided:
		return violation(RuleApprovalBeforeRun, r.Seq(), "tool/start for %q, whose approval/request has no decision", s.ID)
	case c.requested && !c.allow:
		return violation(RuleApprovalBeforeRun, r.Seq(), "tool/start for %q, which was denied", s.ID)
	case c.requested:
		if id := a.undecided(); id != "" {
			return violation(RuleApprovalBeforeRun, r.Seq(), "tool/start for %q before the step's request for %q had a decision: a step resumes once all are decided", s.ID, id)
		}
	case c.policy == session.ActionAsk:
		return violation(RuleApprovalBeforeRun, r.Seq(), "tool/start for %q, which the approval policy in force asks about, without an approval/request", s.ID)
	case c.policy == session.ActionDeny:
		return violation(RuleApprovalBeforeRun, r.Seq(), "tool/start for %q, which the approval policy in force denies", s.ID)
	}
	return nil
}

// denialAnswered: an APPROVAL_DENIED result answers a call a decision
// denied, once every request of its step has a decision, and says who
// denied it and why as the decision does (session.DenialMessage).
func denialAnswered(t *trace, r session.Record) *Violation {
	res, err := payload[session.ToolResult](&t.dec, r)
	if err != nil || res.Error == nil || res.Error.Code != session.CodeApprovalDenied {
		return nil
	}
	a := &t.appr
	c := a.calls[res.ID]
	if c == nil || !c.decided || c.allow {
		return violation(RuleApprovalBeforeRun, r.Seq(), "APPROVAL_DENIED result for %q, which no decision denied", res.ID)
	}
	if id := a.undecided(); id != "" {
		return violation(RuleApprovalBeforeRun, r.Seq(), "APPROVAL_DENIED result for %q before the step's request for %q had a decision: a step resumes once all are decided", res.ID, id)
	}
	if want := session.DenialMessage(c.denial); res.Error.Message != want {
		return &Violation{Rule: RuleApprovalBeforeRun, Seq: r.Seq(), Index: -1,
			Message:  fmt.Sprintf("APPROVAL_DENIED result for %q does not say who denied it and why, as its decision does", res.ID),
			Expected: quote(want), Actual: quote(res.Error.Message)}
	}
	return nil
}

// requestFits: a request asks about a logged call of its own step, once,
// before the call was decided, started or answered; one by the policy's
// author is for a call the policy asks about.
func requestFits(t *trace, r session.Record) *Violation {
	q, err := payload[session.ApprovalRequest](&t.dec, r)
	if err != nil {
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/request data: %v", err)
	}
	a := &t.appr
	ci, ok := t.calls[q.ID]
	c := a.calls[q.ID]
	switch {
	case !ok || !ci.logged || ci.turn != r.Turn() || ci.step != r.Step() || c == nil:
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/request for %q, which is no tool/call of this step", q.ID)
	case c.requested:
		return violation(RuleApprovalBeforeRun, r.Seq(), "second approval/request for %q", q.ID)
	case c.decided || c.started || c.answered:
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/request for %q, which was already decided, started or answered", q.ID)
	case a.policy != nil && q.By == a.policy.Policy().By && c.policy != session.ActionAsk:
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/request by %q for %q, which the policy in force says to %s", q.By, q.ID, c.policy)
	}
	return nil
}

// decisionFits: a decision answers a pending request of its own step
// (decisionAnswers), in a form a person or the loop may log
// (decisionForm), and a citation names the session-scoped allow that
// covers its call (decisionCites).
func decisionFits(t *trace, r session.Record) *Violation {
	d, err := payload[session.ApprovalDecision](&t.dec, r)
	if err != nil {
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/decision data: %v", err)
	}
	if v := decisionAnswers(t, r, d); v != nil {
		return v
	}
	if v := decisionForm(t, r, d); v != nil {
		return v
	}
	return decisionCites(t, r, d)
}

// decisionAnswers: a decision answers a call's request, once, before the
// call started or was answered, within the step of the request.
func decisionAnswers(t *trace, r session.Record, d session.ApprovalDecision) *Violation {
	c := t.appr.calls[d.ID]
	ci := t.calls[d.ID]
	switch {
	case c == nil || !c.requested:
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/decision for %q, which has no approval/request", d.ID)
	case c.decided:
		return violation(RuleApprovalBeforeRun, r.Seq(), "second approval/decision for %q", d.ID)
	case c.started || c.answered:
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/decision for %q, which was already started or answered", d.ID)
	case !t.stepOpen || ci.turn != r.Turn() || ci.step != r.Step():
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/decision for %q outside the step of its request", d.ID)
	}
	return nil
}

// decisionForm: no denial has scope session; a decision by session-rule
// allows with scope call and cites, and only such a decision cites; any
// other decision waits for its step to be suspended (the loop logs one
// by session-rule right after the request).
func decisionForm(t *trace, r session.Record, d session.ApprovalDecision) *Violation {
	switch {
	case d.Scope == session.ScopeSession && !d.Allow:
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/decision for %q denies with scope session, which is not supported", d.ID)
	case d.By == session.SessionRuleBy && (d.Cites == 0 || !d.Allow || d.Scope == session.ScopeSession):
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/decision for %q by %s must allow, with scope call, citing the session-scoped allow it rests on", d.ID, session.SessionRuleBy)
	case d.Cites != 0 && d.By != session.SessionRuleBy:
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/decision for %q by %q cites seq %d: only a decision by %s cites one", d.ID, d.By, d.Cites, session.SessionRuleBy)
	case d.By != session.SessionRuleBy && !t.suspended():
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/decision for %q before its step was suspended (a call of the step without a result has no approval/request)", d.ID)
	}
	return nil
}

// decisionCites: a decision that cites one cites an allowing decision of
// scope session whose cover is its call's (approval.Cover).
func decisionCites(t *trace, r session.Record, d session.ApprovalDecision) *Violation {
	if d.Cites == 0 {
		return nil
	}
	cv, ok := t.appr.sessionScoped[d.Cites]
	switch {
	case !ok:
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/decision for %q cites seq %d, which is no session-scoped allowing decision", d.ID, d.Cites)
	case cv != t.appr.calls[d.ID].covered():
		return violation(RuleApprovalBeforeRun, r.Seq(), "approval/decision for %q cites seq %d, a session-scoped allow that does not cover it (%s)", d.ID, d.Cites, coverDiff(cv, t.appr.calls[d.ID].covered()))
	}
	return nil
}

// suspended reports whether every call of the open step without a result
// was logged and has an approval/request (see session.Suspended).
func (t *trace) suspended() bool {
	for id := range t.msgCalls {
		ci, ok := t.calls[id]
		if ok && ci.answered {
			continue
		}
		if c := t.appr.calls[id]; !ok || !ci.logged || c == nil || !c.requested || c.started {
			return false
		}
	}
	return true
}

// apply advances a past r, which passed validation; d reads r.
func (a *approvals) apply(d *decoded, r session.Record) {
	switch r.Type() {
	case session.TypeApprovalPolicy:
		if p, err := payload[session.ApprovalPolicy](d, r); err == nil {
			a.policy, _ = approval.Compile(p)
		}
	case session.TypeStepEnd:
		a.owed, a.asked = a.owed[:0], a.asked[:0]
	case session.TypeToolCall:
		c, err := payload[session.ToolCall](d, r)
		if err != nil {
			return
		}
		ac := a.newCall()
		*ac = approvalCall{call: c, matcher: a.policy}
		if a.policy != nil {
			ac.policy, _ = a.policy.Match(c.Name, c.Arguments)
			if ac.policy == session.ActionAsk || ac.policy == session.ActionDeny {
				a.owed = append(a.owed, c.ID)
			}
		}
		a.calls[c.ID] = ac
	case session.TypeToolStart:
		if s, err := payload[session.ToolStart](d, r); err == nil && a.calls[s.ID] != nil {
			a.calls[s.ID].started = true
			a.settle(s.ID)
		}
	case session.TypeToolResult:
		if res, err := payload[session.ToolResult](d, r); err == nil && a.calls[res.ID] != nil {
			a.calls[res.ID].answered = true
			a.settle(res.ID)
		}
	case session.TypeApprovalRequest:
		if q, err := payload[session.ApprovalRequest](d, r); err == nil && a.calls[q.ID] != nil {
			a.calls[q.ID].requested = true
			cv := approval.CoverOf(a.calls[q.ID].matcher, a.calls[q.ID].call, q)
			a.calls[q.ID].cover = &cv
			a.asked = append(a.asked, q.ID)
			a.settle(q.ID)
		}
	case session.TypeApprovalDecision:
		if dc, err := payload[session.ApprovalDecision](d, r); err == nil && a.calls[dc.ID] != nil {
			c := a.calls[dc.ID]
			c.decided, c.allow = true, dc.Allow
			if !dc.Allow {
				c.denial = dc
			}
			if dc.Allow && dc.Scope == session.ScopeSession {
				a.sessionScoped[r.Seq()] = c.covered()
			}
		}
	}
}

// covered returns the cover of c, set at its request (zero before).
func (c *approvalCall) covered() approval.Cover {
	if c.cover == nil {
		return approval.Cover{}
	}
	return *c.cover
}

// newCall returns a new zero approvalCall. Calls are never dropped, so
// they are allocated in blocks, not one by one.
func (a *approvals) newCall() *approvalCall {
	if len(a.free) == 0 {
		a.free = make([]approvalCall, 32)
	}
	c := &a.free[0]
	a.free = a.free[1:]
	return c
}

// undecided returns a call of the open step whose request has no
// decision and no result, "" when there is none.
func (a *approvals) undecided() string {
	for _, id := range a.asked {
		if c := a.calls[id]; !c.decided && !c.answered {
			return id
		}
	}
	return ""
}

// settle drops id from the calls owed a request or a result.
func (a *approvals) settle(id string) {
	for i, o := range a.owed {
		if o == id {
			a.owed = append(a.owed[:i], a.owed[i+1:]...)
			return
		}
	}
}

// coverDiff says how the cover of a cited allow differs from a call's.
func coverDiff(cited, call approval.Cover) string {
	switch {
	case cited.Tool != call.Tool:
		return fmt.Sprintf("it allowed tool %q, not %q", cited.Tool, call.Tool)
	case cited.By != call.By || cited.Reason != call.Reason:
		return fmt.Sprintf("it answered a request by %q for %q, not by %q for %q", cited.By, cited.Reason, call.By, call.Reason)
	}
	return "another rule of the policy asked"
}
