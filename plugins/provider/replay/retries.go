package replay

import (
	"slices"

	"github.com/vigil-run/vigil/session"
)

// A continuation runs again, before its first step, each unknown call
// whose tool it is offered then, idempotent (agentloop's retryUnknown).
// The tools offered then are logged nowhere: a request/header logs a
// step's tools, and the tool set may change before the first step, or
// the process die before it logs one. What the log does show is which
// calls the continuation ran again: their tool/retry is logged, and made
// durable, before each runs. So the rerun offers at a continuation's
// start the tools that make the loop run again the calls the recording
// shows it did, and no other.

// retryTools is the tool list the rerun offers the continuation that
// the recorded records [i, stop) show, when it starts: the tools of h
// (the header in force at its first step), with each tool of a call the
// recording left unknown and the continuation did not run again offered
// as not idempotent, and each tool of a call it ran again offered as the
// header of that call's step declared it.
func (x *rerun) retryTools(h session.Header, i, stop int) []session.ToolSpec {
	calls := map[string]session.Record{} // tool/call by call id
	unknown := map[string]bool{}         // tool names with a call still unknown
	for _, r := range x.recs[:i] {
		switch r.Type() {
		case session.TypeToolCall:
			if c, err := session.DecodeData[session.ToolCall](r); err == nil {
				calls[c.ID] = r
			}
		case session.TypeToolResult:
			if res, err := session.DecodeData[session.ToolResult](r); err == nil && res.Error != nil && res.Error.Code == session.CodeToolOutcomeUnknown {
				unknown[res.Name] = true
			}
		}
	}
	retried := map[string]session.ToolSpec{}
	var order []string
	for _, r := range x.recs[i:stop] {
		rt, err := session.DecodeData[session.ToolRetry](r)
		if err != nil || r.Type() != session.TypeToolRetry {
			continue
		}
		spec, ok := x.calledWith(calls[rt.ID])
		if _, seen := retried[spec.Name]; ok && !seen {
			retried[spec.Name] = spec
			order = append(order, spec.Name)
		}
	}
	out := make([]session.ToolSpec, 0, len(h.Tools)+len(order))
	for _, spec := range h.Tools {
		if s, ok := retried[spec.Name]; ok {
			spec = s
			delete(retried, spec.Name)
		} else if unknown[spec.Name] {
			spec.Idempotent = false // the recording shows it was not run again
		}
		out = append(out, spec)
	}
	for _, name := range order {
		if s, ok := retried[name]; ok {
			out = append(out, s) // offered then, whatever the header says
		}
	}
	return slices.Clip(out)
}

// calledWith is the spec of the tool of the recorded tool/call c in the
// header of its step.
func (x *rerun) calledWith(c session.Record) (session.ToolSpec, bool) {
	if c.IsZero() {
		return session.ToolSpec{}, false
	}
	call, err := session.DecodeData[session.ToolCall](c)
	if err != nil {
		return session.ToolSpec{}, false
	}
	if st := x.byStep[[2]int{c.Turn(), c.Step()}]; st != nil {
		for _, spec := range st.Header.Tools {
			if spec.Name == call.Name {
				return spec, true
			}
		}
	}
	return session.ToolSpec{}, false
}
