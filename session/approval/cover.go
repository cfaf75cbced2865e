package approval

import "github.com/vigil-run/vigil/session"

// Cover is what an allowing decision of scope session ("always for this
// session") covers: the later calls whose Cover equals that of the call
// it answered. Two calls have equal covers when they call the same tool,
// their requests were made by the same asker for the same reason and,
// when the asker is the policy in force, the same rule of it asked (or
// its default did, for both). The person said yes to what the request
// showed them — this tool, asked for this reason — so a call of another
// tool, or one another rule asks about (a stricter rule on the
// arguments, say), still asks. Arguments are not compared otherwise:
// "always" is for the tool, not for one call of it. Cover is comparable
// with ==, and is derived from the log alone, so verify can check it.
type Cover struct {
	Tool, By, Reason string
	// Rule is the policy rule that asked, Default whether the policy's
	// default did; both zero when the asker is not the policy in force.
	Rule    session.ApprovalRule
	Default bool
}

// CoverOf returns the cover of call asked with req under policy (the
// policy in force at the call, nil when none).
func CoverOf(policy *Matcher, call session.ToolCall, req session.ApprovalRequest) Cover {
	c := Cover{Tool: call.Name, By: req.By, Reason: req.Reason}
	if policy != nil && req.By == policy.p.By {
		if i := policy.match(call.Name, call.Arguments); i >= 0 {
			c.Rule = policy.p.Rules[i]
		} else {
			c.Default = true
		}
	}
	return c
}

// coverFold is what [Covering] and [CoveredBy] read of a log.
type coverFold struct {
	policy *Matcher // in force at the end
	covers map[string]Cover
	allows []sessionAllow // in log order
}

type sessionAllow struct {
	seq   int64
	d     session.ApprovalDecision
	cover Cover
}

func foldCovers(records []session.Record) coverFold {
	f := coverFold{covers: map[string]Cover{}}
	calls := map[string]session.ToolCall{}
	at := map[string]*Matcher{} // the policy in force at each call
	for _, r := range records {
		switch r.Type() {
		case session.TypeApprovalPolicy:
			if p, err := session.DecodeData[session.ApprovalPolicy](r); err == nil {
				f.policy, _ = Compile(p) // checked at load: it compiles
			}
		case session.TypeToolCall:
			if p, err := session.DecodeData[session.ToolCall](r); err == nil {
				calls[p.ID], at[p.ID] = p, f.policy
			}
		case session.TypeApprovalRequest:
			if p, err := session.DecodeData[session.ApprovalRequest](r); err == nil {
				if c, ok := calls[p.ID]; ok {
					f.covers[p.ID] = CoverOf(at[p.ID], c, p)
				}
			}
		case session.TypeApprovalDecision:
			if p, err := session.DecodeData[session.ApprovalDecision](r); err == nil {
				if cv, ok := f.covers[p.ID]; ok && p.Allow && p.Scope == session.ScopeSession {
					f.allows = append(f.allows, sessionAllow{r.Seq(), p, cv})
				}
			}
		}
	}
	return f
}

func (f *coverFold) latest(want Cover, except string) (int64, session.ApprovalDecision) {
	for i := len(f.allows) - 1; i >= 0; i-- {
		if a := f.allows[i]; a.cover == want && a.d.ID != except {
			return a.seq, a.d
		}
	}
	return 0, session.ApprovalDecision{}
}

// Covering returns the seq and data of the latest allowing decision of
// scope session in records that covers call asked with req under the
// policy in force at records' end (the call itself not logged yet), or 0
// when none does.
func Covering(records []session.Record, call session.ToolCall, req session.ApprovalRequest) (int64, session.ApprovalDecision) {
	f := foldCovers(records)
	return f.latest(CoverOf(f.policy, call, req), "")
}

// CoveredBy returns the seq and data of the latest allowing decision of
// scope session in records, other than its own, that covers the logged
// and requested call id, or 0 when none does.
func CoveredBy(records []session.Record, id string) (int64, session.ApprovalDecision) {
	f := foldCovers(records)
	cv, ok := f.covers[id]
	if !ok {
		return 0, session.ApprovalDecision{}
	}
	return f.latest(cv, id)
}
