package session

import (
	"errors"
	"fmt"
	"strings"
)

// A call whose outcome is unknown (a tool/start was logged, then the
// process died: repair answered it TOOL_OUTCOME_UNKNOWN) stays unknown to
// the model until its real outcome is logged as a tool/reconcile. Two
// writers log one:
//
//   - the continuation turn, for a call whose tool declared itself
//     idempotent (ToolSpec.Idempotent in the request header of the step
//     that ran it): it logs a tool/retry, makes it durable, runs the tool
//     again with the same idempotency key, and logs the new outcome as a
//     tool/reconcile (By empty);
//   - a person or a program (vigil reconcile, POST
//     /v1/sessions/{id}/reconcile/{call}), between turns: the outcome they
//     found, attributed to the principal (By).
//
// The fold shows a tool/reconcile to the model from its position on (see
// [ReconcileMessage]); nothing earlier is rewritten.
const (
	// TypeToolRetry logs an attempt to learn an unknown outcome by running
	// an idempotent call again with its key. Turn-scoped (the
	// continuation turn, before its first step); sources = [the call's
	// TOOL_OUTCOME_UNKNOWN tool/result]. Made durable before the tool
	// runs, like tool/start. A crash before its tool/reconcile leaves the
	// call unknown; the next continuation retries again.
	TypeToolRetry = "tool/retry"
	// TypeToolReconcile logs the real outcome of a call whose outcome was
	// unknown. Sources = [the call's TOOL_OUTCOME_UNKNOWN tool/result]
	// (and, after a retry, [that result, the tool/retry]). At most one
	// per call; never for a call whose result is known.
	TypeToolReconcile = "tool/reconcile"
)

// ToolRetry is the data of tool/retry.
type ToolRetry struct {
	ID string `json:"id"`
}

// ToolReconcile is the data of tool/reconcile: the call's outcome, as a
// tool result says it (Content, or Error), and who established it.
type ToolReconcile struct {
	ID      string           `json:"id"`
	Name    string           `json:"name,omitempty"`
	Content string           `json:"content,omitempty"`
	Error   *ToolResultError `json:"error,omitempty"`
	// By names the principal who reconciled the call; empty for the
	// runtime's own retry.
	By string `json:"by,omitempty"`
}

// CodeToolError is the error code of a tool that failed: a tool's own
// error (agentloop.CodeToolFailed is this code), and a tool/reconcile
// whose call a person reports failed (vigil reconcile --failed REASON:
// the message is REASON).
const CodeToolError = "TOOL_ERROR"

// ReconcileMessage is the text the model is shown for a tool/reconcile:
// who reconciled which call, and its outcome. The fold projects the
// record to a user-role message holding it, at the record's position:
// the earlier TOOL_OUTCOME_UNKNOWN result stays as it was, so every
// request logged before keeps its prefix.
func ReconcileMessage(r ToolReconcile) string {
	var b strings.Builder
	b.WriteString("The outcome of tool call ")
	b.WriteString(r.ID)
	if r.Name != "" {
		b.WriteString(" (" + r.Name + ")")
	}
	b.WriteString(", which was unknown, was reconciled by ")
	if r.By == "" {
		b.WriteString("running it again with its idempotency key")
	} else {
		b.WriteString(r.By)
	}
	switch {
	case r.Error != nil:
		b.WriteString(". The call failed: error " + r.Error.Code)
		if r.Error.Message != "" {
			b.WriteString(": " + r.Error.Message)
		}
		if r.Content != "" {
			b.WriteString("\n" + r.Content)
		}
	case r.Content == "":
		b.WriteString(". The call succeeded, with an empty result.")
	default:
		b.WriteString(". The call succeeded; its result:\n" + r.Content)
	}
	return b.String()
}

// Errors of [CheckReconcile], which callers branch on with errors.Is.
var (
	// ErrOutcomeKnown: the call has a result whose outcome is known (it
	// is not TOOL_OUTCOME_UNKNOWN), or none at all yet.
	ErrOutcomeKnown = errors.New("session: the tool call's outcome is known")
	// ErrAlreadyReconciled: the call was reconciled already (see
	// [ReconciledError]).
	ErrAlreadyReconciled = errors.New("session: the tool call was reconciled already")
)

// ReconciledError says that a call was reconciled already, by whom and
// at which seq: a second reconciler that lost a race is told who won.
// It matches [ErrAlreadyReconciled].
type ReconciledError struct {
	ID  string
	By  string
	Seq int64
}

func (e *ReconciledError) Error() string {
	by := e.By
	if by == "" {
		by = "the runtime's retry"
	}
	return fmt.Sprintf("session: tool call %q was already reconciled by %s (seq %d)", e.ID, by, e.Seq)
}

func (e *ReconciledError) Is(target error) bool { return target == ErrAlreadyReconciled }

// UnknownCall is a call whose outcome the log does not know: its only
// result is TOOL_OUTCOME_UNKNOWN, and nothing reconciled it yet.
type UnknownCall struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	Turn int    `json:"turn"`
	Step int    `json:"step"`
	// Result is the seq of its TOOL_OUTCOME_UNKNOWN tool/result.
	Result int64 `json:"result"`
}

// callOutcome is what a log says of one call's outcome.
type callOutcome struct {
	UnknownCall
	called     bool  // a tool/call or an assistant message named it
	results    int   // its tool/results
	unknown    bool  // its (first) result is TOOL_OUTCOME_UNKNOWN
	reconciled int64 // the seq of its tool/reconcile, -1 when none
	by         string
}

// outcomes reads every call's outcome from records, in call order.
func outcomes(records []Record) (map[string]*callOutcome, []string) {
	calls := map[string]*callOutcome{}
	var order []string
	get := func(id string) *callOutcome {
		c := calls[id]
		if c == nil {
			c = &callOutcome{UnknownCall: UnknownCall{ID: id, Result: -1}, reconciled: -1}
			calls[id] = c
			order = append(order, id)
		}
		return c
	}
	for _, r := range records {
		switch p := r.pay().(type) {
		case ToolCall:
			c := get(p.ID)
			c.called, c.Name, c.Turn, c.Step = true, p.Name, r.turn, r.step
		case AssistantMessage:
			for _, tc := range p.ToolCalls {
				c := get(tc.ID)
				c.called, c.Name, c.Turn, c.Step = true, tc.Name, r.turn, r.step
			}
		case ToolResult:
			c := get(p.ID)
			c.results++
			if c.results == 1 {
				c.Result = r.seq
				c.unknown = p.Error != nil && p.Error.Code == CodeToolOutcomeUnknown
			}
		case ToolReconcile:
			c := get(p.ID)
			if c.reconciled < 0 {
				c.reconciled, c.by = r.seq, p.By
			}
		}
	}
	return calls, order
}

// Unknown returns the calls of records whose outcome is unknown and not
// reconciled, in the order they were made: what a person may reconcile.
func Unknown(records []Record) []UnknownCall {
	calls, order := outcomes(records)
	var out []UnknownCall
	for _, id := range order {
		if c := calls[id]; c.called && c.results == 1 && c.unknown && c.reconciled < 0 {
			out = append(out, c.UnknownCall)
		}
	}
	return out
}

// CheckReconcile returns the event that logs rec as the real outcome of
// call id of records, a person's or a program's between turns, or why it
// cannot be logged: [ErrOpenTurn] (a turn is open: suspended, or being
// written), [ErrUnknownCall], [ErrOutcomeKnown] (the call has no result
// yet, or one that is not TOOL_OUTCOME_UNKNOWN), a [*ReconciledError],
// or [ErrInvalidPayload] (an error without a code). rec.ID and rec.Name
// are set from the call; its sources cite the unknown result.
func CheckReconcile(records []Record, id string, rec ToolReconcile) (Event, error) {
	if st := scanTurns(records); st.turn != 0 {
		return Event{}, fmt.Errorf("session: reconcile %q: %w (turn %d)", id, ErrOpenTurn, st.turn)
	}
	calls, _ := outcomes(records)
	c := calls[id]
	switch {
	case c == nil || !c.called:
		return Event{}, fmt.Errorf("%w: %q", ErrUnknownCall, id)
	case c.reconciled >= 0:
		return Event{}, &ReconciledError{ID: id, By: c.by, Seq: c.reconciled}
	case c.results != 1 || !c.unknown:
		return Event{}, fmt.Errorf("%w: %q has no TOOL_OUTCOME_UNKNOWN result to reconcile", ErrOutcomeKnown, id)
	case rec.Error != nil && rec.Error.Code == "":
		return Event{}, fmt.Errorf("%w: reconcile %q: an error without a code", ErrInvalidPayload, id)
	}
	rec.ID, rec.Name = id, c.Name
	return Event{Type: TypeToolReconcile, Sources: []int64{c.Result}, Data: rec}, nil
}

// Reconciled returns the tool/reconcile of call id in records and its
// seq, and whether there is one.
func Reconciled(records []Record, id string) (ToolReconcile, int64, bool) {
	for i := len(records) - 1; i >= 0; i-- {
		if p, ok := records[i].pay().(ToolReconcile); ok && p.ID == id {
			return p, records[i].seq, true
		}
	}
	return ToolReconcile{}, -1, false
}
