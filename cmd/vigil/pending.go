package main

import (
	"fmt"
	"io"

	"github.com/vigil-run/vigil/session"
)

// printPending says what a suspended session waits for and how to decide.
func printPending(w io.Writer, id string, s *session.Suspension) {
	w = termWriter{w}
	undecided := s.Undecided()
	if len(undecided) == 0 {
		fmt.Fprintf(w, "turn %d is decided and waits to resume: vigil approve %s resumes it\n", s.Turn, id)
		return
	}
	fmt.Fprintf(w, "turn %d waits for a decision on %d tool call(s):\n", s.Turn, len(undecided))
	for _, c := range undecided {
		fmt.Fprintf(w, "  %s  %s %s", c.Call.ID, c.Call.Name, oneLine(c.Call.Arguments, 100))
		if c.Request.Reason != "" {
			fmt.Fprintf(w, "  (%s: %s)", c.Request.By, oneLine(c.Request.Reason, 80))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "decide with: vigil approve %s [CALL]   or   vigil deny %s [CALL] --reason \"…\"\n", id, id)
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
