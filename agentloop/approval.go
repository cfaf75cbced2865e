package agentloop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/approval"
	"github.com/vigil-run/vigil/session/live"
)

// ReasonSuspended is the TurnResult.Reason of a turn whose step waits for
// approvals. It is no turn/end reason: the turn stays open in the log.
const ReasonSuspended = "suspended"

// ErrSuspended is matched (errors.Is) by the error of a turn that
// suspended on approvals and by the refusal of a new prompt on a
// suspended session; the error is a [*SuspendedError] naming the calls.
var ErrSuspended = errors.New("agentloop: waiting for approval")

// ErrNotReady is matched by [Agent.Resume] on a session whose suspended
// step still has undecided calls (the error is a [*SuspendedError]).
var ErrNotReady = errors.New("agentloop: calls still wait for a decision")

// SuspendedError names the calls a suspended session waits for.
type SuspendedError struct {
	Session string
	// Calls are the calls without a decision; when every call is decided
	// (Decided set), the decided calls that wait for [Agent.Resume].
	Calls []session.PendingCall
	// Decided: every call has its decision; the turn waits to be resumed.
	Decided bool
	// notReady: the refusal of Resume while some are undecided.
	notReady bool
}

func (e *SuspendedError) Error() string {
	var b strings.Builder
	if e.Decided {
		fmt.Fprintf(&b, "agentloop: session %s has a suspended turn whose %d decided tool call(s) wait to be resumed:", e.Session, len(e.Calls))
	} else {
		fmt.Fprintf(&b, "agentloop: session %s waits for a decision on %d tool call(s):", e.Session, len(e.Calls))
	}
	for i, c := range e.Calls {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s (%s %s)", c.Call.ID, session.Excerpt(c.Call.Name, maxEcho), session.Excerpt(c.Call.Arguments, maxEcho))
	}
	return b.String()
}

// Is matches ErrSuspended, and ErrNotReady for Resume's refusal.
func (e *SuspendedError) Is(target error) bool {
	return target == ErrSuspended || (e.notReady && target == ErrNotReady)
}

// ApprovalQuery is the payload of [ToolApprove]: one tool call of a step,
// about to be logged and run.
type ApprovalQuery struct {
	// Session is the session of the call. A listener may append to it
	// (the approvals plugin logs the policy it answers with, so that the
	// log holds the policy in force for every call).
	Session    *live.Session
	Turn, Step int
	Call       session.ToolCall
}

// Subject implements bus.Subjecter: the query is about its session.
func (q *ApprovalQuery) Subject() any { return q.Session.ID() }

// Verdict is an answer to an [ApprovalQuery]. The zero Verdict is no
// answer (the next listener is asked; when none answers, the call runs).
type Verdict struct {
	// Action is session.ActionAllow, ActionDeny or ActionAsk.
	Action string
	// By names who decided (logged as the request's by); Reason is shown
	// to the person asked, or to the model for a denial.
	By, Reason string
}

// ToolApprove is the tool/approve hook the loop consults for each tool
// call of a step before it logs the calls (first answer wins; see
// [Verdict]). Allow runs the call; deny logs it and answers it with a
// POLICY_DENIED result the model sees; ask logs it with an
// approval/request and suspends the step once the calls that need no
// decision have run — unless an earlier allow of scope session covers
// the call ([approval.Cover]): then the loop logs a decision by
// session.SessionRuleBy citing it, and the call runs. A [bus.Veto] listener of the dispatch, or a
// listener, may also answer ask by returning an [*AskError]; any other
// veto ends the turn blocked.
var ToolApprove = bus.NewHook[*ApprovalQuery, Verdict]("tool/approve")

// AskError is the error a veto or hook listener returns to answer a
// tool call with ask rather than refuse it.
type AskError struct {
	// By names who asks (default: the listener's plugin); Reason is shown
	// to the person asked.
	By, Reason string
}

func (e *AskError) Error() string {
	if e.Reason == "" {
		return "approval required"
	}
	return "approval required: " + e.Reason
}

// approve asks ToolApprove about call: the verdict, or a fatal error.
func (t *turn) approve(ctx context.Context, step int, call session.ToolCall) (Verdict, error) {
	v, err := ToolApprove.Bail(ctx, t.a.c, &ApprovalQuery{Session: t.sess, Turn: t.n, Step: step, Call: call})
	var ask *AskError
	switch {
	case errors.As(err, &ask):
		v = Verdict{Action: session.ActionAsk, By: ask.By, Reason: ask.Reason}
		if pe := (*bus.PluginError)(nil); v.By == "" && errors.As(err, &pe) {
			v.By = pe.Plugin
		}
		return v, nil
	case err != nil:
		if be := vetoed(ToolApprove.Name(), err); be != nil {
			return Verdict{}, be
		}
		return Verdict{}, fmt.Errorf("agentloop: %s: %w", ToolApprove.Name(), err)
	}
	switch v.Action {
	case "", session.ActionAllow, session.ActionDeny, session.ActionAsk:
		return v, nil
	}
	return Verdict{}, fmt.Errorf("agentloop: %s: unknown action %q for call %s", ToolApprove.Name(), v.Action, call.ID)
}

// runGated runs the calls of step n as their verdicts say. It reports
// whether the step is suspended: some call was answered ask and the turn
// was not cancelled meanwhile.
func (t *turn) runGated(ctx context.Context, n int, calls []session.ToolCall, tools []Tool) (suspended bool, err error) {
	verdicts, gated, err := t.verdicts(ctx, n, calls)
	if err != nil {
		return false, err
	}
	if !gated {
		pending, err := t.runTools(ctx, n, calls, tools)
		if err != nil || len(pending) == 0 {
			return false, err
		}
		t.res.Pending = append(t.res.Pending, pending...)
		return true, nil
	}
	rules, suspends := t.coveringRules(calls, verdicts)
	if err := t.denyFirst(n, calls, verdicts); err != nil {
		return false, err
	}
	asked, suspends, err := t.runInOrder(ctx, n, calls, verdicts, rules, suspends, tools)
	if err != nil || !suspends {
		return false, err
	}
	return t.wait(n, asked, ctx.Err() != nil)
}

// verdicts asks the approval hooks about each call of step n, and
// reports whether any call is gated (denied or asked).
func (t *turn) verdicts(ctx context.Context, n int, calls []session.ToolCall) ([]Verdict, bool, error) {
	verdicts := make([]Verdict, len(calls))
	gated := false
	for i, c := range calls {
		var err error
		if verdicts[i], err = t.approve(ctx, n, c); err != nil {
			return nil, false, err
		}
		gated = gated || !allowed(verdicts[i])
	}
	return verdicts, gated, nil
}

// allowed reports whether v lets its call run without a decision.
func allowed(v Verdict) bool { return v.Action == "" || v.Action == session.ActionAllow }

// coveringRules finds, for each asked call, the earlier session-scoped
// allow that covers it ("always for this session"), and reports whether
// the step suspends: some asked call is covered by none.
//
// A covered call is decided by its rule, in a decision of its own right
// after its request, and runs in its place — unless another call of the
// step waits for a person: then the step suspends, and it runs, decided,
// when the step resumes (a decided call runs only once every request of
// its step has a decision). The policy the hooks logged is in force by
// now.
func (t *turn) coveringRules(calls []session.ToolCall, verdicts []Verdict) ([]sessionRule, bool) {
	rules := make([]sessionRule, len(calls))
	suspends := false
	for i, c := range calls {
		if verdicts[i].Action == session.ActionAsk {
			rules[i].seq, rules[i].d = approval.Covering(t.sess.Records(), c, session.ApprovalRequest{ID: c.ID, By: verdicts[i].By, Reason: verdicts[i].Reason})
			suspends = suspends || rules[i].seq == 0
		}
	}
	return rules, suspends
}

// denyFirst logs the policy's denials before any call of the step runs:
// a crash while one runs never loses them (they are made durable with
// its tool/start). With denialsInPlace they are logged in call order
// instead, by runInOrder.
func (t *turn) denyFirst(n int, calls []session.ToolCall, verdicts []Verdict) error {
	if t.a.denialsInPlace {
		return nil
	}
	for i, c := range calls {
		if verdicts[i].Action == session.ActionDeny {
			if err := t.denyByPolicy(n, c, verdicts[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// runInOrder walks the calls of step n in the model's order: runs of
// allowed calls keep the loop's batching; the asked ones are logged in
// their place, so the log keeps the model's call order among them. It
// returns the asked calls still to settle and whether the step suspends.
func (t *turn) runInOrder(ctx context.Context, n int, calls []session.ToolCall, verdicts []Verdict, rules []sessionRule, suspends bool, tools []Tool) ([]session.PendingCall, bool, error) {
	byName := toolsByName(tools)
	var asked []session.PendingCall
	for i := 0; i < len(calls); {
		if allowed(verdicts[i]) {
			j := i + 1
			for j < len(calls) && allowed(verdicts[j]) {
				j++
			}
			waiting, err := t.runTools(ctx, n, calls[i:j], tools)
			if err != nil {
				return nil, false, err
			}
			asked = append(asked, waiting...)
			suspends = suspends || len(waiting) > 0
			i = j
			continue
		}
		c, v, rule := calls[i], verdicts[i], rules[i]
		i++
		if v.Action == session.ActionDeny {
			if !t.a.denialsInPlace {
				continue // logged by denyFirst
			}
			if err := t.denyByPolicy(n, c, v); err != nil {
				return nil, false, err
			}
			continue
		}
		p, ran, err := t.ask(ctx, n, c, v, rule, suspends, byName)
		if err != nil {
			return nil, false, err
		}
		if !ran {
			asked = append(asked, p)
		}
	}
	return asked, suspends, nil
}

// ask logs the asked call c with its approval request and, when rule
// covers it, the rule's decision; a decided call runs now unless the
// step suspends. It reports whether the call ran.
func (t *turn) ask(ctx context.Context, n int, c session.ToolCall, v Verdict, rule sessionRule, suspends bool, byName map[string]Tool) (session.PendingCall, bool, error) {
	rec, err := t.append(session.Event{Type: session.TypeToolCall, Step: n, Data: c})
	if err != nil {
		return session.PendingCall{}, false, err
	}
	req := session.ApprovalRequest{ID: c.ID, By: v.By, Reason: v.Reason}
	rq, err := t.append(session.Event{Type: session.TypeApprovalRequest, Step: n, Data: req})
	if err != nil {
		return session.PendingCall{}, false, err
	}
	p := session.PendingCall{Call: c, CallSeq: rec.Seq(), Request: req, RequestSeq: rq.Seq()}
	if rule.seq == 0 {
		return p, false, nil
	}
	d := rule.decision(c.ID)
	dr, err := t.append(session.Event{Type: session.TypeApprovalDecision, Step: n, Data: d})
	if err != nil {
		return session.PendingCall{}, false, err
	}
	p.Decision, p.DecisionSeq = &d, dr.Seq()
	if suspends {
		return p, false, nil
	}
	if err := t.runDecided(ctx, n, p, byName); err != nil {
		return session.PendingCall{}, false, err
	}
	return p, true, nil
}

// wait suspends step n on its asked calls, the undecided of which become
// the turn's Pending. A cancelled turn does not wait: its asked calls
// never run, answered TOOL_NOT_STARTED.
func (t *turn) wait(n int, asked []session.PendingCall, cancelled bool) (bool, error) {
	if cancelled {
		for _, p := range asked {
			if err := t.answer(n, p, &session.ToolResultError{Code: session.CodeToolNotStarted, Message: "the turn was aborted before a decision"}); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	for _, p := range asked {
		if p.Decision == nil {
			t.res.Pending = append(t.res.Pending, p)
		}
	}
	return true, nil
}

// denyByPolicy logs call c, which the policy denies, with its
// POLICY_DENIED result.
func (t *turn) denyByPolicy(n int, c session.ToolCall, v Verdict) error {
	rec, err := t.append(session.Event{Type: session.TypeToolCall, Step: n, Data: c})
	if err != nil {
		return err
	}
	msg := "the approval policy denies this call"
	if v.Reason != "" {
		msg += ": " + v.Reason
	}
	res := session.ToolResult{ID: c.ID, Name: c.Name, Error: &session.ToolResultError{Code: session.CodePolicyDenied, Message: msg}}
	_, err = t.append(session.Event{Type: session.TypeToolResult, Step: n, Sources: []int64{rec.Seq()}, Data: res})
	return err
}

// sessionRule is the session-scoped allow that covers a call: its seq (0
// when none does) and data.
type sessionRule struct {
	seq int64
	d   session.ApprovalDecision
}

// decision is the decision the loop logs for call id, which r covers.
func (r sessionRule) decision(id string) session.ApprovalDecision {
	by := r.d.By
	if by == "" {
		by = "someone"
	}
	return session.ApprovalDecision{
		ID: id, Allow: true, By: session.SessionRuleBy, Cites: r.seq,
		Reason: fmt.Sprintf("allowed for this session by %s (seq %d)", by, r.seq),
	}
}

func toolsByName(tools []Tool) map[string]Tool {
	byName := make(map[string]Tool, len(tools))
	for _, tl := range tools {
		byName[tl.Spec().Name] = tl
	}
	return byName
}

// answer logs the result of pending call p without running it.
func (t *turn) answer(n int, p session.PendingCall, e *session.ToolResultError) error {
	res := session.ToolResult{ID: p.Call.ID, Name: p.Call.Name, Error: e}
	_, err := t.append(session.Event{Type: session.TypeToolResult, Step: n, Sources: []int64{p.CallSeq}, Data: res})
	return err
}

// suspend ends the run of a turn whose step waits for decisions: the
// log is made durable, the turn left open.
func (t *turn) suspend() (*TurnResult, error) {
	t.res.Reason = ReasonSuspended
	if err := t.receipt(); err != nil {
		return &t.res, err
	}
	if err := t.sess.Flush(t.actx); err != nil {
		return &t.res, fmt.Errorf("agentloop: suspend: %w", err)
	}
	return &t.res, &SuspendedError{Session: t.sess.ID(), Calls: t.res.Pending}
}

// refuseSuspended returns the refusal of a new turn on a session whose
// open turn is suspended, nil when it is not.
func refuseSuspended(sess *live.Session) error {
	s := session.Suspended(sess.Records())
	if s == nil {
		return nil
	}
	if s.Ready() {
		return &SuspendedError{Session: sess.ID(), Calls: s.Calls, Decided: true}
	}
	return &SuspendedError{Session: sess.ID(), Calls: s.Undecided()}
}

// Decision is a person's (or a program's) answer to a pending call.
type Decision struct {
	Allow bool
	// By names who decided; Reason is shown to the model for a denial.
	By, Reason string
	// Scope is "" or session.ScopeCall for this call, session.ScopeSession
	// for "always for this session": the later calls it covers (the same
	// tool asked for the same reason by the same rule; see
	// [approval.Cover]) are not suspended but decided by the loop, each in
	// its own logged decision citing this one. Only an allow may have
	// scope session.
	Scope string
}

// decideMu makes the check and the append of one decision atomic among
// the decisions of this process: two people deciding the same call at
// once get one decision and one [*session.DecidedError].
var decideMu sync.Mutex

// Decide logs d as the decision for the pending call callID of sess's
// suspended step and flushes it. An allow of scope session also decides
// the step's other pending calls it covers (see [approval.Cover]), each
// with a decision by [session.SessionRuleBy] citing it; later calls it
// covers are decided so when they are asked. It refuses, logging
// nothing, a denial of scope session or a decision by
// session.SessionRuleBy ([session.ErrInvalidDecision]), a session
// not suspended ([session.ErrNotSuspended]), an unknown call
// ([session.ErrUnknownCall]), a call that waits for no decision
// ([session.ErrNotPending]) and a second decision ([*session.DecidedError],
// matching [session.ErrAlreadyDecided]). It does not resume the step: call
// [Agent.Resume] once every pending call is decided (Ready on the
// session's [session.Suspended]).
func Decide(ctx context.Context, sess *live.Session, callID string, d Decision) (session.Record, error) {
	decideMu.Lock()
	defer decideMu.Unlock()
	ev, err := approval.CheckDecision(sess.Records(), callID, session.ApprovalDecision{Allow: d.Allow, By: d.By, Reason: d.Reason, Scope: d.Scope})
	if err != nil {
		return session.Record{}, fmt.Errorf("agentloop: decide %s in session %s: %w", callID, sess.ID(), err)
	}
	rec, err := sess.Append(ctx, ev)
	if err != nil {
		return session.Record{}, fmt.Errorf("agentloop: decide %s: %w", callID, err)
	}
	if d.Allow && d.Scope == session.ScopeSession {
		// The step's other calls this allow covers are decided by it now,
		// as later ones will be when asked.
		for _, p := range session.Suspended(sess.Records()).Undecided() {
			if seq, sd := approval.CoveredBy(sess.Records(), p.Call.ID); seq == rec.Seq() {
				ev := session.Event{Type: session.TypeApprovalDecision, Turn: ev.Turn, Step: ev.Step, Data: sessionRule{seq, sd}.decision(p.Call.ID)}
				if _, err := sess.Append(ctx, ev); err != nil {
					return rec, fmt.Errorf("agentloop: decide %s, covered by %s: %w", p.Call.ID, callID, err)
				}
			}
		}
	}
	if err := sess.Flush(ctx); err != nil {
		return rec, fmt.Errorf("agentloop: decide %s: %w", callID, err)
	}
	return rec, nil
}

// Resume continues the suspended turn of sess once every pending call
// has a decision: each allowed call runs (tool/start, tool/result), each
// denied one is answered with an APPROVAL_DENIED result carrying the
// decision's reason, the step ends, and the turn goes on with its next
// steps as [Agent.Run] would. It returns Run's results and errors, and
// refuses, with a nil result, a session that is not suspended
// ([session.ErrNotSuspended]) or still has undecided calls (a
// [*SuspendedError] matching [ErrNotReady]). A turn that suspends again
// returns as Run does.
func (a *Agent) Resume(ctx context.Context, sess *live.Session, opts ...RunOption) (*TurnResult, error) {
	return a.withTurn(ctx, sess, opts, func(ctx context.Context, t *turn) (*TurnResult, error) {
		return t.resume(ctx)
	})
}

func (t *turn) resume(ctx context.Context) (*TurnResult, error) {
	s := session.Suspended(t.sess.Records())
	if s == nil {
		return nil, fmt.Errorf("agentloop: resume session %s: %w", t.sess.ID(), session.ErrNotSuspended)
	}
	if !s.Ready() {
		return nil, &SuspendedError{Session: t.sess.ID(), Calls: s.Undecided(), notReady: true}
	}
	_, tools, err := t.a.resolve()
	if err != nil {
		return nil, err
	}
	byName := toolsByName(tools)
	t.n = s.Turn
	t.res = TurnResult{Session: t.sess.ID(), Turn: s.Turn, Steps: s.Step}
	// Denials are answered first, before any allowed call runs (and made
	// durable with its tool/start): a crash while one runs never turns a
	// denial into "not started". A sub-agent's denial goes to its child,
	// in its place.
	denied := func(p session.PendingCall) bool {
		return !p.Decision.Allow && !deferredStart(byName[p.Call.Name]) && !t.a.denialsInPlace
	}
	for _, first := range []bool{true, false} {
		for _, p := range s.Calls {
			if denied(p) != first {
				continue
			}
			if err := t.runDecided(ctx, s.Step, p, byName); err != nil {
				return t.finish(failReason(err), err)
			}
		}
	}
	// The usage the step logged before it suspended is its step/end's.
	if _, err := t.append(session.Event{Type: session.TypeStepEnd, Step: s.Step, Data: session.StepEnd{Finish: session.FinishToolCalls, Usage: s.Usage}}); err != nil {
		return t.finish(failReason(err), err)
	}
	switch {
	case ctx.Err() != nil:
		return t.finish(session.ReasonAborted, context.Cause(ctx))
	case s.Step >= t.a.cfg.MaxSteps:
		return t.finish(session.ReasonMaxSteps, nil)
	}
	return t.steps(ctx, s.Step+1)
}

// runDecided runs or answers one decided call of a resumed step. A
// sub-agent's call takes the decision to its waiting child (subagent.go).
func (t *turn) runDecided(ctx context.Context, n int, p session.PendingCall, byName map[string]Tool) error {
	d := p.Decision
	tl := byName[p.Call.Name]
	deferred := deferredStart(tl)
	if !d.Allow {
		e := &session.ToolResultError{Code: session.CodeApprovalDenied, Message: session.DenialMessage(*d)}
		if !deferred {
			return t.answer(n, p, e)
		}
		// The child is told too, and ends its turn as its model sees fit.
		inv := &ToolInvocation{Session: t.sess.ID(), Turn: t.n, Step: n, Call: p.Call, CallSeq: p.CallSeq, Tool: tl, decided: d}
		out := t.a.runBatch(ctx, []*ToolInvocation{inv})[0]
		res := session.ToolResult{ID: p.Call.ID, Name: p.Call.Name, Error: e, Child: out.Child}
		_, err := t.append(session.Event{Type: session.TypeToolResult, Step: n, Sources: []int64{p.CallSeq}, Data: res})
		return err
	}
	if ctx.Err() != nil {
		return t.answer(n, p, &session.ToolResultError{Code: session.CodeToolNotStarted, Message: "the turn was aborted before the tool ran"})
	}
	args, bad := checkArguments(p.Call.Arguments)
	if bad != nil {
		return t.answer(n, p, bad)
	}
	if !deferred {
		if _, err := t.append(session.Event{Type: session.TypeToolStart, Step: n, Data: session.ToolStart{ID: p.Call.ID}}); err != nil {
			return err
		}
		if err := t.durable(); err != nil {
			return err
		}
	}
	inv := &ToolInvocation{Session: t.sess.ID(), Turn: t.n, Step: n, Call: session.ToolCall{ID: p.Call.ID, Name: p.Call.Name, Arguments: args}, CallSeq: p.CallSeq, Tool: tl, decided: d}
	out := t.a.runBatch(ctx, []*ToolInvocation{inv})[0]
	if deferred {
		if _, err := t.append(session.Event{Type: session.TypeToolStart, Step: n, Data: session.ToolStart{ID: p.Call.ID}}); err != nil {
			return err
		}
	}
	res := session.ToolResult{ID: p.Call.ID, Name: p.Call.Name, Content: out.Content, Error: out.Error, Child: out.Child}
	_, err := t.append(session.Event{Type: session.TypeToolResult, Step: n, Sources: []int64{p.CallSeq}, Data: res})
	return err
}
