package agentloop

import (
	"context"

	"github.com/vigil-run/vigil/session"
)

// A crash while a tool ran leaves its call's outcome unknown (repair
// answers it TOOL_OUTCOME_UNKNOWN). When the call's tool declared itself
// idempotent, running it again with the same idempotency key is safe:
// the effect happens once, and the outcome becomes known. The
// continuation does that before its first step, for the calls of the
// turn it continues (and of the turns that one continued, so that a
// retry a crash cut short is tried again by the next continuation). The
// others stay unknown, for a person to reconcile (session/reconcile.go).

// unknownCall is a call whose outcome is unknown and that a continuation
// may run again.
type unknownCall struct {
	call    session.ToolCall
	callSeq int64 // its tool/call
	result  int64 // its TOOL_OUTCOME_UNKNOWN tool/result
	tool    Tool
}

// retryable returns, in log order, the calls a continuation of turn
// continued runs again: calls of that turn and of the turns it continues,
// transitively, whose only result is TOOL_OUTCOME_UNKNOWN, that have no
// tool/reconcile, whose tool the request header of their step declared
// idempotent, and whose tool is offered now, still idempotent. A
// sub-agent (a deferred start) is never run again: its call is a child
// turn, not an effect with a key.
func retryable(recs []session.Record, continued int, tools []Tool) []unknownCall {
	chain := continuedTurns(recs, continued)
	byName := make(map[string]Tool, len(tools))
	for _, tl := range tools {
		if s := tl.Spec(); s.Idempotent && !deferredStart(tl) {
			byName[s.Name] = tl
		}
	}
	var (
		hdr   session.Header
		calls []unknownCall
		at    = map[string]int{} // index in calls by call id
	)
	for _, r := range recs {
		switch r.Type() {
		case session.TypeRequestHeader:
			if h, err := session.DecodeData[session.RequestHeader](r); err == nil {
				hdr = h.Header
			}
		case session.TypeToolCall:
			c, err := session.DecodeData[session.ToolCall](r)
			if err != nil || !chain[r.Turn()] || byName[c.Name] == nil || !declaredIdempotent(hdr, c.Name) {
				continue
			}
			at[c.ID] = len(calls)
			calls = append(calls, unknownCall{call: c, callSeq: r.Seq(), result: -1, tool: byName[c.Name]})
		case session.TypeToolResult:
			res, err := session.DecodeData[session.ToolResult](r)
			if i, ok := at[res.ID]; ok && err == nil {
				if res.Error != nil && res.Error.Code == session.CodeToolOutcomeUnknown && calls[i].result < 0 {
					calls[i].result = r.Seq()
				} else {
					calls[i].result = -2 // a known result, or a second one: not ours to retry
				}
			}
		case session.TypeToolReconcile:
			if rc, err := session.DecodeData[session.ToolReconcile](r); err == nil {
				if i, ok := at[rc.ID]; ok {
					calls[i].result = -2
				}
			}
		}
	}
	out := calls[:0]
	for _, u := range calls {
		if u.result >= 0 {
			if args, bad := checkArguments(u.call.Arguments); bad == nil {
				u.call.Arguments = args
				out = append(out, u)
			}
		}
	}
	return out
}

// continuedTurns returns turn n and the turns it continues, each
// continuation naming an earlier turn.
func continuedTurns(recs []session.Record, n int) map[int]bool {
	continues := map[int]int{}
	for _, r := range recs {
		if r.Type() == session.TypeTurnStart {
			if s, err := session.DecodeData[session.TurnStart](r); err == nil {
				continues[r.Turn()] = s.Continues
			}
		}
	}
	chain := map[int]bool{}
	for n > 0 && !chain[n] {
		chain[n] = true
		if c := continues[n]; c < n {
			n = c
		} else {
			break
		}
	}
	return chain
}

// declaredIdempotent reports whether h declares the tool name idempotent.
func declaredIdempotent(h session.Header, name string) bool {
	for _, s := range h.Tools {
		if s.Name == name {
			return s.Idempotent
		}
	}
	return false
}

// retryUnknown runs again, before the continuation's first step, each
// call of the continued turns that [retryable] names, one at a time: it
// logs tool/retry, makes it durable, runs the call through tool/execute
// with its idempotency key, and logs what it returned as the call's
// tool/reconcile (a tool's error is an outcome too). An outcome still
// unknown (the turn was cancelled while it ran, the tool was abandoned
// or itself said so) is not logged: the call stays unknown, and the next
// continuation tries again. ran says whether a call ran: a turn cancelled
// then ends without a step.
func (t *turn) retryUnknown(ctx context.Context, continued int, tools []Tool) (ran bool, _ error) {
	for _, u := range retryable(t.sess.Records(), continued, tools) {
		if ctx.Err() != nil {
			return ran, nil
		}
		// A call a fork inherited ran in the session it was forked
		// from, with that session's key: the retry must use it, or the
		// effect happens twice.
		origin, err := t.sess.Origin(ctx, u.callSeq)
		if err != nil {
			t.a.c.Logger().Warn("the session a call ran in is gone; its outcome stays unknown", "session", t.sess.ID(), "call", u.call.ID, "error", err)
			continue
		}
		retry, err := t.append(session.Event{Type: session.TypeToolRetry, Sources: []int64{u.result}, Data: session.ToolRetry{ID: u.call.ID}})
		if err != nil {
			return ran, err
		}
		if err := t.durable(); err != nil {
			return ran, err
		}
		ran = true
		inv := &ToolInvocation{Session: t.sess.ID(), Turn: t.n, Call: u.call, CallSeq: u.callSeq, Tool: u.tool, Retry: true,
			Key: session.IdempotencyKey(origin, u.call.ID)}
		out := t.a.runBatch(ctx, []*ToolInvocation{inv})[0]
		if e := out.Error; e != nil && (e.Code == session.CodeToolOutcomeUnknown || e.Code == CodeToolAbandoned) {
			continue
		}
		rc := session.ToolReconcile{ID: u.call.ID, Name: u.call.Name, Content: out.Content, Error: out.Error}
		if _, err := t.append(session.Event{Type: session.TypeToolReconcile, Sources: []int64{u.result, retry.Seq()}, Data: rc}); err != nil {
			return ran, err
		}
	}
	return ran, nil
}
