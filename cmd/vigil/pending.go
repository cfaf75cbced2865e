package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/session"
)

// subagentBy is how a delegation's approval/request names who asks: the
// sub-agent, whose own session holds the calls waiting.
const subagentBy = "sub-agent "

// childWaits finds, for a call of session parent that is a sub-agent's
// delegation waiting for decisions, the sub-agent's session and the calls
// it waits for; nil when c is not one, or the child cannot be read.
type childWaits func(parent string, c session.PendingCall) (child string, calls []session.PendingCall)

// storeChildWaits reads the children from rt's store.
func storeChildWaits(ctx context.Context, rt *vigil.Runtime) childWaits {
	return func(parent string, c session.PendingCall) (string, []session.PendingCall) {
		if !strings.HasPrefix(c.Request.By, subagentBy) {
			return "", nil
		}
		infos, err := rt.Sessions(ctx)
		if err != nil {
			return "", nil
		}
		for _, in := range infos {
			if p := in.Parent; p != nil && p.ID == parent && p.Seq == c.CallSeq && p.Call == c.Call.ID {
				s, err := rt.Pending(ctx, in.ID)
				if err != nil || s == nil {
					return in.ID, nil
				}
				return in.ID, s.Undecided()
			}
		}
		return "", nil
	}
}

// printPending says what a suspended session waits for and how to decide:
// each call in full, and under a sub-agent's delegation the calls its
// session waits for, in full too (children may be nil: then the request's
// reason names them).
func printPending(w io.Writer, id string, s *session.Suspension, children childWaits) {
	w = termWriter{w}
	undecided := s.Undecided()
	if len(undecided) == 0 {
		fmt.Fprintf(w, "turn %d is decided and waits to resume: vigil approve %s resumes it\n", s.Turn, id)
		return
	}
	fmt.Fprintf(w, "turn %d waits for a decision on %d tool call(s):\n", s.Turn, len(undecided))
	for _, c := range undecided {
		fmt.Fprintf(w, "  %s\n", describePending(c))
		printChildCalls(w, children, id, c, "    ")
	}
	fmt.Fprintf(w, "decide with: vigil approve %s [CALL]   or   vigil deny %s [CALL] --reason \"…\"\n", id, id)
}

// describePending is a waiting call on one line: id, tool, arguments and
// who asks why, none of it cut.
func describePending(c session.PendingCall) string {
	s := fmt.Sprintf("%s  %s %s", c.Call.ID, c.Call.Name, oneLine(c.Call.Arguments, -1))
	if c.Request.Reason != "" {
		s += fmt.Sprintf("  (%s: %s)", c.Request.By, oneLine(c.Request.Reason, -1))
	}
	return s
}

// printChildCalls prints the calls the sub-agent behind call c of session
// parent waits for, and theirs in turn, indented.
func printChildCalls(w io.Writer, children childWaits, parent string, c session.PendingCall, indent string) {
	if children == nil {
		return
	}
	child, calls := children(parent, c)
	for _, cc := range calls {
		fmt.Fprintf(w, "%s↳ in sub-agent session %s: %s\n", indent, child, describePending(cc))
		printChildCalls(w, children, child, cc, indent+"  ")
	}
}

// printUnknown lists the calls whose outcome is unknown and how to
// reconcile them; nothing when there are none.
func printUnknown(w io.Writer, id string, calls []session.UnknownCall) {
	w = termWriter{w}
	if len(calls) == 0 {
		return
	}
	fmt.Fprintf(w, "%d tool call(s) with an unknown outcome (the process died while they ran):\n", len(calls))
	for _, c := range calls {
		fmt.Fprintf(w, "  %s  %s  (turn %d step %d)\n", c.ID, c.Name, c.Turn, c.Step)
	}
	fmt.Fprintf(w, "reconcile with: vigil reconcile %s CALL --result FILE   or   --failed \"…\"\n", id)
}
