package session

import (
	"fmt"
	"time"
)

// Closers returns the events that close the open tail turn of a log, in
// order, or nil when no turn is open. Loading a log appends them (it never
// truncates): the conversation that was cut by a crash ends the way an
// interrupted one would have.
//
// The rule:
//
//  1. If a step is open, every tool call of that step without a result
//     gets a tool/result with an error and sources [its tool/call] (or [the
//     assistant/message] for a call the model asked for that was never
//     logged as a tool/call):
//     - TOOL_OUTCOME_UNKNOWN when a tool/start with the call's id was
//     logged: execution began, and whether the tool had its effect is
//     unknown;
//     - TOOL_NOT_STARTED otherwise: the loop logs tool/start immediately
//     before it executes a call, so a call without one never ran.
//  2. If a step is open, step/end with finish "error" (and the usage of
//     the step's step/usage, when it suspended on approvals before).
//  3. turn/end with reason "interrupted".
//
// A call whose id already has a result anywhere in the log gets none: a
// second result for one id breaks the log for good (every later load
// and verify would refuse it). Such a call can only come from a log
// written before call ids were made unique per session, by a provider
// that repeats them.
//
// A step suspended on approvals (see [Suspended]) is not a crash: its
// tail waits for decisions, or, once decided, resumes, so Closers returns
// nil for it. [CloseTail] closes it regardless.
func Closers(records []Record) []Event {
	if Suspended(records) != nil {
		return nil
	}
	return CloseTail(records)
}

// CloseTail is [Closers] for a tail that must end now even if it is
// suspended on approvals: a loop whose turn failed closes its open step
// with it, whatever the step waited for.
func CloseTail(records []Record) []Event {
	st := scanTurns(records)
	if st.turn == 0 {
		return nil
	}
	var out []Event
	if st.step != 0 {
		var answered map[string]bool
		if len(st.pending) > 0 {
			answered = answeredCalls(records)
		}
		for _, c := range st.pending {
			if answered[c.id] {
				continue
			}
			e := &ToolResultError{Code: CodeToolNotStarted, Message: "the session was interrupted before the tool call started"}
			if c.started {
				e = &ToolResultError{Code: CodeToolOutcomeUnknown, Message: "the session was interrupted while the tool ran; its outcome is unknown"}
			}
			res := ToolResult{ID: c.id, Name: c.name, Error: e}
			out = append(out, Event{Type: TypeToolResult, Turn: st.turn, Step: st.step, Sources: []int64{c.source}, Data: res})
		}
		// A step that suspended logged its reply's usage for its step/end.
		out = append(out, Event{Type: TypeStepEnd, Turn: st.turn, Step: st.step, Data: StepEnd{Finish: FinishError, Usage: st.usage}})
	}
	return append(out, Event{Type: TypeTurnEnd, Turn: st.turn, Data: TurnEnd{Reason: ReasonInterrupted}})
}

// answeredCalls returns the ids of every tool/result of records.
func answeredCalls(records []Record) map[string]bool {
	out := map[string]bool{}
	for _, r := range records {
		if res, ok := r.pay().(ToolResult); ok && r.typ == TypeToolResult {
			out[res.ID] = true
		}
	}
	return out
}

// repairRecords makes the records of [Closers] for records at time t.
func repairRecords(records []Record, t time.Time) ([]Record, error) {
	evs := Closers(records)
	out := make([]Record, 0, len(evs))
	next := int64(len(records))
	for i := range evs {
		r, err := newRecord(next+int64(i), t, &evs[i])
		if err != nil {
			return nil, fmt.Errorf("session: repair: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}
