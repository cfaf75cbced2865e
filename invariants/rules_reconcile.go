package invariants

import "github.com/vigil-run/vigil/session"

// reconciles is what tool-retry and tool-reconcile know of a log: the
// tool/retry records, by seq, with the call each retries and its turn.
type reconciles struct {
	retries map[int64]retryInfo
}

type retryInfo struct {
	call string
	turn int
}

// toolRetry: a tool/retry is logged in the open turn, a continuation,
// before its first step, for a call whose only result is
// TOOL_OUTCOME_UNKNOWN and that nothing reconciled yet, citing that
// result alone.
func toolRetry(t *trace, r session.Record) *Violation {
	if r.Type() != session.TypeToolRetry {
		return nil
	}
	p, err := payload[session.ToolRetry](&t.dec, r)
	if err != nil {
		return violation(RuleToolRetry, r.Seq(), "tool/retry data: %v", err)
	}
	if v := beforeFirstStep(t, r, RuleToolRetry); v != nil {
		return v
	}
	if v := unknownCall(t, r, RuleToolRetry, p.ID); v != nil {
		return v
	}
	if src := t.dec.sources(r); len(src) != 1 || src[0] != t.calls[p.ID].result {
		return violation(RuleToolRetry, r.Seq(), "tool/retry of %q must cite its TOOL_OUTCOME_UNKNOWN result seq %d, cites %v", p.ID, t.calls[p.ID].result, src)
	}
	return nil
}

// toolReconcile: a tool/reconcile settles a call whose only result is
// TOOL_OUTCOME_UNKNOWN, after it, once. A person's (no turn) is logged
// between turns and cites that result; the continuation's (its turn) is
// logged before the continuation's first step and cites that result and
// a tool/retry of the call in this turn.
func toolReconcile(t *trace, r session.Record) *Violation {
	if r.Type() != session.TypeToolReconcile {
		return nil
	}
	p, err := payload[session.ToolReconcile](&t.dec, r)
	if err != nil {
		return violation(RuleToolReconcile, r.Seq(), "tool/reconcile data: %v", err)
	}
	if r.Turn() == 0 {
		if t.turnOpen {
			return violation(RuleToolReconcile, r.Seq(), "tool/reconcile of %q without a turn while turn %d is open", p.ID, t.turn)
		}
	} else if v := beforeFirstStep(t, r, RuleToolReconcile); v != nil {
		return v
	}
	if v := unknownCall(t, r, RuleToolReconcile, p.ID); v != nil {
		return v
	}
	c := t.calls[p.ID]
	src := t.dec.sources(r)
	want := "its TOOL_OUTCOME_UNKNOWN result"
	if r.Turn() != 0 {
		want += " and a tool/retry of it in this turn"
	}
	ok := len(src) >= 1 && src[0] == c.result && len(src) <= 2
	if ok && len(src) == 2 {
		rt, retried := t.recon.retries[src[1]]
		ok = retried && rt.call == p.ID && (r.Turn() == 0 || rt.turn == r.Turn())
	} else if r.Turn() != 0 {
		ok = false
	}
	if !ok {
		return violation(RuleToolReconcile, r.Seq(), "tool/reconcile of %q must cite %s (seq %d), cites %v", p.ID, want, c.result, src)
	}
	return nil
}

// beforeFirstStep: r names the open turn, a continuation, which has no
// step yet.
func beforeFirstStep(t *trace, r session.Record, rule string) *Violation {
	switch {
	case !t.turnOpen || r.Turn() != t.turn:
		return violation(rule, r.Seq(), "%s names turn %d, which is not open", r.Type(), r.Turn())
	case !t.continuing:
		return violation(rule, r.Seq(), "%s in turn %d, which is not a continuation", r.Type(), t.turn)
	case t.step != 0:
		return violation(rule, r.Seq(), "%s after step %d of its turn began", r.Type(), t.step)
	}
	return nil
}

// unknownCall: call id was made, answered once TOOL_OUTCOME_UNKNOWN, and
// is not reconciled.
func unknownCall(t *trace, r session.Record, rule, id string) *Violation {
	c, ok := t.calls[id]
	switch {
	case !ok:
		return violation(rule, r.Seq(), "%s of %q, which is no tool call of the session", r.Type(), id)
	case !c.answered:
		return violation(rule, r.Seq(), "%s of %q, which has no result yet", r.Type(), id)
	case !c.unknown:
		return violation(rule, r.Seq(), "%s of %q, whose result (seq %d) is known: only a TOOL_OUTCOME_UNKNOWN result is reconciled", r.Type(), id, c.result)
	case c.reconciled >= 0:
		return violation(rule, r.Seq(), "%s of %q, which seq %d reconciled already", r.Type(), id, c.reconciled)
	}
	return nil
}

// apply advances the reconcile state past r, which passed validate.
func (rc *reconciles) apply(t *trace, r session.Record) {
	switch r.Type() {
	case session.TypeToolRetry:
		if p, err := payload[session.ToolRetry](&t.dec, r); err == nil {
			if rc.retries == nil {
				rc.retries = map[int64]retryInfo{}
			}
			rc.retries[r.Seq()] = retryInfo{call: p.ID, turn: r.Turn()}
		}
	case session.TypeToolReconcile:
		if p, err := payload[session.ToolReconcile](&t.dec, r); err == nil {
			if c, ok := t.calls[p.ID]; ok {
				c.reconciled = r.Seq()
				t.calls[p.ID] = c
			}
		}
	}
}
