package replay

import (
	"github.com/vigil-run/vigil/session"
)

// denialsInCallOrder reports whether the records show a step whose
// denials were logged in the model's call order, after a call of the step
// had started: a log written before the loop logged a step's denials
// first. The rerun must then log them that way too
// (agentloop.WithDenialsInCallOrder).
//
// The loop now logs a step's POLICY_DENIED calls (tool/call, then
// tool/result) before any other call of the step, and, when the step
// resumes, its APPROVAL_DENIED results before any call the decisions
// allowed starts. So a POLICY_DENIED after another call of its step, or an
// APPROVAL_DENIED after a tool/start that follows the step's last
// decision, can only be the old order. A denied delegation is answered in
// its place in either order (its child is told), so it shows nothing.
func denialsInCallOrder(recs []session.Record, delegated map[string]bool) bool {
	type step struct {
		others         map[string]bool // calls logged that the policy did not deny (so far)
		startedDecided bool            // a tool/start after the step's last approval/decision
	}
	steps := map[[2]int]*step{}
	for _, r := range recs {
		if r.Step() == 0 {
			continue
		}
		k := [2]int{r.Turn(), r.Step()}
		s := steps[k]
		if s == nil {
			s = &step{others: map[string]bool{}}
			steps[k] = s
		}
		switch r.Type() {
		case session.TypeToolCall:
			if c, err := session.DecodeData[session.ToolCall](r); err == nil {
				s.others[c.ID] = true
			}
		case session.TypeToolStart:
			s.startedDecided = true
		case session.TypeApprovalDecision:
			s.startedDecided = false
		case session.TypeToolResult:
			if denialAfterOthers(r, s.others, s.startedDecided, delegated) {
				return true
			}
		}
	}
	return false
}

// denialAfterOthers reports whether result r is a denial logged where the
// loop now logs none: a POLICY_DENIED after another call of its step (its
// own call is taken out of others), or an APPROVAL_DENIED after a decided
// call started.
func denialAfterOthers(r session.Record, others map[string]bool, startedDecided bool, delegated map[string]bool) bool {
	res, err := session.DecodeData[session.ToolResult](r)
	if err != nil || res.Error == nil || delegated[res.Name] {
		return false
	}
	switch res.Error.Code {
	case session.CodePolicyDenied:
		delete(others, res.ID)
		return len(others) > 0
	case session.CodeApprovalDenied:
		return startedDecided
	}
	return false
}
