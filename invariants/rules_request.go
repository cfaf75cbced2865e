package invariants

import (
	"fmt"
	"strings"

	"github.com/vigil-run/vigil/session"
)

// requestReconstruction: the request's messages equal, position by
// position, the fresh fold of the log prefix before the in-flight step's
// step/start. It allocates nothing unless it finds a divergence.
func requestReconstruction(expected []session.Message, actual session.Messages) *Violation {
	return requestReconstructionFrom(expected, actual, 0)
}

// requestReconstructionFrom is requestReconstruction for messages whose
// first from positions are known equal (see checkedPrefix).
func requestReconstructionFrom(expected []session.Message, actual session.Messages, from int) *Violation {
	n := min(len(expected), actual.Len())
	for i := from; i < n; i++ {
		if !actual.EqualAt(i, &expected[i]) {
			return &Violation{Rule: RuleRequestReconstruction, Seq: -1, Index: i,
				Message:  fmt.Sprintf("message %d differs from the fold of the log", i),
				Expected: excerpt(expected, i), Actual: excerpt(actual.Clone(), i)}
		}
	}
	if len(expected) != actual.Len() {
		what := "drops"
		if actual.Len() > len(expected) {
			what = "adds"
		}
		return &Violation{Rule: RuleRequestReconstruction, Seq: -1, Index: n,
			Message:  fmt.Sprintf("request %s messages: %d sent, the log folds to %d", what, actual.Len(), len(expected)),
			Expected: excerpt(expected, n), Actual: excerpt(actual.Clone(), n)}
	}
	return nil
}

// requestHeader: model, system, tools, sampling and output schema equal
// the latest request/header.
func requestHeader(logged session.Header, ok bool, sent session.Header) *Violation {
	if !ok {
		return &Violation{Rule: RuleRequestHeader, Seq: -1, Index: -1, Message: "no request/header logged before the request"}
	}
	if session.HeaderEquals(logged, sent) {
		return nil
	}
	field, want, got := headerDiff(logged, sent)
	return &Violation{Rule: RuleRequestHeader, Seq: -1, Index: -1,
		Message: fmt.Sprintf("%s differs from the latest request/header", field), Expected: want, Actual: got}
}

func headerDiff(a, b session.Header) (field, want, got string) {
	switch {
	case a.Provider != b.Provider:
		return "provider", quote(a.Provider), quote(b.Provider)
	case a.Model != b.Model:
		return "model", quote(a.Model), quote(b.Model)
	case a.System != b.System:
		i := firstDiff(a.System, b.System)
		return "system", quote(from(a.System, i)), quote(from(b.System, i))
	case a.MaxTokens != b.MaxTokens:
		return "max_tokens", fmt.Sprint(a.MaxTokens), fmt.Sprint(b.MaxTokens)
	case fmt.Sprint(a.Stop) != fmt.Sprint(b.Stop):
		return "stop", cut(fmt.Sprintf("%q", a.Stop)), cut(fmt.Sprintf("%q", b.Stop))
	case (a.Temperature == nil) != (b.Temperature == nil) || (a.Temperature != nil && *a.Temperature != *b.Temperature):
		return "temperature", fmtTemp(a.Temperature), fmtTemp(b.Temperature)
	case !session.HeaderEquals(session.Header{OutputSchema: a.OutputSchema}, session.Header{OutputSchema: b.OutputSchema}):
		return "output_schema", cut(string(a.OutputSchema)), cut(string(b.OutputSchema))
	}
	return toolsDiff(a.Tools, b.Tools)
}

// toolsDiff names the first tool that differs and what differs in it:
// `tool "echo": description`, with the two values.
func toolsDiff(a, b []session.ToolSpec) (field, want, got string) {
	if len(a) != len(b) {
		return "tools", cut(toolNames(a)), cut(toolNames(b))
	}
	for i := range a {
		x, y := &a[i], &b[i]
		switch {
		case x.Name != y.Name:
			return fmt.Sprintf("tool %d: name", i), quote(x.Name), quote(y.Name)
		case x.Description != y.Description:
			i := firstDiff(x.Description, y.Description)
			return fmt.Sprintf("tool %q: description", x.Name), quote(from(x.Description, i)), quote(from(y.Description, i))
		case x.Idempotent != y.Idempotent:
			return fmt.Sprintf("tool %q: idempotent", x.Name), fmt.Sprint(x.Idempotent), fmt.Sprint(y.Idempotent)
		case !session.HeaderEquals(session.Header{Tools: a[i : i+1]}, session.Header{Tools: b[i : i+1]}):
			return fmt.Sprintf("tool %q: parameters", x.Name), cut(string(x.Parameters)), cut(string(y.Parameters))
		}
	}
	return "tools", cut(toolNames(a)), cut(toolNames(b))
}

func fmtTemp(t *float64) string {
	if t == nil {
		return "unset"
	}
	return fmt.Sprint(*t)
}

func toolNames(ts []session.ToolSpec) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return "[" + strings.Join(names, " ") + "]"
}

func firstDiff(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// from returns s from a little before i, so an excerpt shows the divergence.
func from(s string, i int) string {
	const context = 20
	if i <= context {
		return s
	}
	return "…" + s[i-context:]
}

// orphanedToolResult: every tool message answers a tool call of an
// earlier assistant message of the request itself.
func orphanedToolResult(msgs []session.Message) *Violation {
	for i := range msgs {
		m := &msgs[i]
		if m.Role != session.RoleTool {
			continue
		}
		if !answered(msgs[:i], m.ToolCallID) {
			return &Violation{Rule: RuleOrphanedToolResult, Seq: -1, Index: i,
				Message: fmt.Sprintf("tool message %d answers call %q, which no earlier assistant message made", i, m.ToolCallID)}
		}
	}
	return nil
}

func answered(before []session.Message, id string) bool {
	for j := len(before) - 1; j >= 0; j-- {
		if before[j].Role != session.RoleAssistant {
			continue
		}
		for _, c := range before[j].ToolCalls {
			if c.ID == id {
				return true
			}
		}
	}
	return false
}

// excerpt renders up to two messages before and after index i.
func excerpt(msgs []session.Message, i int) string {
	const around = 2
	var b strings.Builder
	b.WriteString("[")
	lo, hi := max(0, i-around), min(len(msgs), i+around+1)
	if lo > 0 {
		b.WriteString("… ")
	}
	for k := lo; k < hi; k++ {
		if k > lo {
			b.WriteString(", ")
		}
		if k == i {
			b.WriteString("▶")
		}
		fmt.Fprintf(&b, "%d:%s", k, renderMessage(&msgs[k]))
	}
	if hi < len(msgs) {
		b.WriteString(" …")
	}
	if i >= len(msgs) {
		b.WriteString(" ▶(end)")
	}
	b.WriteString("]")
	return b.String()
}

func renderMessage(m *session.Message) string {
	var b strings.Builder
	b.WriteString(m.Role)
	if m.ToolCallID != "" {
		b.WriteString("(" + m.ToolCallID + ")")
	}
	b.WriteString(" ")
	b.WriteString(quote(m.Content))
	for _, c := range m.ToolCalls {
		fmt.Fprintf(&b, " call %s %s(%s)", c.ID, c.Name, cut(c.Arguments))
	}
	return b.String()
}
