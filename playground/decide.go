package playground

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session"
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
	// calls its request covers (session.Cover): "always for this session".
	Always bool `json:"always"`
}

// decideResult is what the page shows of a decision.
type decideResult struct {
	// Seq is the seq of the decision logged.
	Seq int64 `json:"seq"`
	// Resumed: every pending call of the step is decided, so the turn
	// goes on — the demo's in the background, streamed as any turn;
	// another session's before the answer (then Session is as it is
	// afterwards, and Error says how the turn failed, if it did).
	Resumed bool `json:"resumed"`
	// Undecided are the ids of the step's calls still waiting.
	Undecided []string     `json:"undecided"`
	Session   *sessionView `json:"session,omitempty"`
	Error     string       `json:"error,omitempty"`
}

// decide logs the visitor's decision on a pending call of a session it
// shows (agentloop.Decide) and, once the step has every decision, resumes
// the turn (agentloop.Agent.Resume). The call must be pending in the log
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
	if _, err := session.CheckDecision(base.records, req.Call, session.ApprovalDecision{Allow: d.Allow, By: d.By, Reason: d.Reason, Scope: d.Scope}); err != nil {
		return nil, fmt.Errorf("playground: decide %s: %w", req.Call, err)
	}
	demo := v.pl.isDemo(sess.ID())
	var (
		rec *session.Record
		err error
	)
	decideIn := func() { rec, err = agentloop.Decide(s.base, sess, req.Call, d) }
	if demo {
		v.pl.decide(decideIn)
	} else {
		decideIn()
	}
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
	if susp == nil || !susp.Ready() {
		return res, nil
	}
	res.Resumed = true
	if demo {
		v.pl.decided()
		return res, nil
	}
	// Not the demo (a forged copy of a suspended demo, say): nothing runs
	// its turn in the background, so it resumes here.
	ctx, cancel := context.WithTimeout(s.base, turnTimeout)
	defer cancel()
	model, err := scripted.New(nextScript())
	if err != nil {
		return nil, err
	}
	agent := agentloop.New(s.c, agentConfig, agentloop.WithProvider(model), agentloop.WithTools(calc.Tool{}), agentloop.WithName("playground"))
	if _, err := agent.Resume(ctx, sess); err != nil && !errors.Is(err, agentloop.ErrSuspended) {
		res.Error = err.Error()
	}
	if err := agent.Close(); err != nil {
		s.opts.Logger.Error("closing the agent", "error", err)
	}
	if sv, ok := v.hub.snapshot(sess.ID()); ok {
		res.Session = &sv
	}
	return res, nil
}
