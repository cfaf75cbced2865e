package playground

import (
	"fmt"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/approval"
)

// decisionBy is the by of the decisions the page gives: the person at it.
const decisionBy = "playground visitor"

// decideRequest is the page's decision on a pending call of a session it
// shows.
type decideRequest struct {
	Session string `json:"session"`
	Call    string `json:"call"`
	Allow   bool   `json:"allow"`
	// Reason is shown to the model with a denial.
	Reason string `json:"reason"`
	// Always allows the call and, for the rest of the session, the later
	// calls its request covers (approval.Cover): "always for this session".
	Always bool `json:"always"`
}

// decideResult is what the page shows of a decision.
type decideResult struct {
	// Seq is the seq of the decision logged.
	Seq int64 `json:"seq"`
	// Resumed: every pending call of the step is decided, so the turn
	// goes on, in the background, streamed as any turn.
	Resumed bool `json:"resumed"`
	// Undecided are the ids of the step's calls still waiting.
	Undecided []string `json:"undecided"`
}

// decide logs the visitor's decision on a pending call of a session it
// shows (agentloop.Decide) and, once the step has every decision, has the
// demo's run resume the turn (agentloop.Agent.Resume). The call must be pending in the log
// as the page shows it: a decision answers what the visitor saw.
func (v *visitor) decide(req decideRequest) (*decideResult, error) {
	if err := v.lock(); err != nil {
		return nil, err
	}
	defer v.act.Unlock()
	s := v.srv
	base, ok := v.hub.records(req.Session)
	if !ok {
		return nil, fmt.Errorf("%w: %q", errNotShown, req.Session)
	}
	if req.Call == "" {
		return nil, fmt.Errorf("%w: call is required", errInvalid)
	}
	sess, ok := s.mgr.Get(req.Session)
	if !ok {
		return nil, fmt.Errorf("%w: %s is closed", errNotShown, req.Session)
	}
	d := agentloop.Decision{Allow: req.Allow, By: decisionBy, Reason: req.Reason}
	if req.Always {
		d.Scope = session.ScopeSession
	}
	if _, err := approval.CheckDecision(base.records, req.Call, session.ApprovalDecision{Allow: d.Allow, By: d.By, Reason: d.Reason, Scope: d.Scope}); err != nil {
		return nil, fmt.Errorf("playground: decide %s: %w", req.Call, err)
	}
	var (
		rec session.Record
		err error
	)
	v.pl.decide(func() { rec, err = agentloop.Decide(s.base, sess, req.Call, d) })
	if err != nil {
		return nil, err
	}
	res := &decideResult{Seq: rec.Seq(), Undecided: []string{}}
	susp := session.Suspended(sess.Records())
	if susp != nil {
		for _, c := range susp.Undecided() {
			res.Undecided = append(res.Undecided, c.Call.ID)
		}
	}
	// Only the demo can be suspended (a fork or a forged copy cannot be
	// cut inside an open turn); its run resumes the turn.
	if susp == nil || !susp.Ready() || !v.pl.isDemo(sess.ID()) {
		return res, nil
	}
	res.Resumed = true
	v.pl.decided()
	return res, nil
}
