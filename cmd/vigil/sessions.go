package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vigil-run/vigil/plugins/budget"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// listSessions lists every readable session on stdout and names each
// unreadable one on stderr, with its error; only with strict does an
// unreadable one fail the command.
func listSessions(ctx context.Context, e *env, mgr *live.Manager, prices map[string]budget.Price, asJSON, strict bool) error {
	w := e.stdout
	infos, err := mgr.Store().List(ctx)
	unreadable := 0
	if err != nil {
		var le *session.ListError
		if !errors.As(err, &le) {
			return err
		}
		for _, ent := range le.Entries {
			fmt.Fprintf(e.stderr, "unreadable: %v\n", &ent)
		}
		unreadable += len(le.Entries)
	}
	type row = sessionRow
	rows := make([]row, 0, len(infos))
	for _, info := range infos {
		r := row{ID: info.ID, Created: info.Created.UTC(), Tenant: info.Tenant, By: info.By, Parent: info.Parent}
		log, err := mgr.Store().Load(ctx, info.ID)
		if err != nil {
			// A header that reads over a log that does not: not a
			// session of "0 turns, 0 events".
			fmt.Fprintf(e.stderr, "unreadable: %s: %v\n", info.ID, err)
			unreadable++
			continue
		}
		r.Events = len(log.Records)
		acc := budget.Tally(log.Records, prices)
		r.Usage, r.TurnUsage, r.OneShotUsage = acc.Session, nonNil(acc.Turns), acc.OneShots
		for _, rec := range log.Records {
			if rec.Type() == session.TypeTurnStart {
				r.Turns++
			}
		}
		rows = append(rows, r)
	}
	if err := printSessions(w, rows, asJSON); err != nil {
		return err
	}
	if unreadable > 0 && strict {
		return silentError{exitFailed}
	}
	return nil
}

// sessionRow is one line of `sessions list`.
type sessionRow struct {
	ID      string          `json:"id"`
	Created time.Time       `json:"created"` // RFC 3339 in JSON
	Tenant  string          `json:"tenant,omitempty"`
	By      string          `json:"by,omitempty"`
	Parent  *session.Parent `json:"parent,omitempty"`
	Events  int             `json:"events"`
	Turns   int             `json:"turns"`
	// Usage is the usage of the session's model calls in all (steps and
	// one-shots), priced by the budget entry's table; TurnUsage the same
	// per turn; OneShotUsage the one-shots' (outside turns), absent when
	// none logged any.
	Usage        budget.Spent       `json:"usage"`
	TurnUsage    []budget.TurnSpent `json:"turn_usage"`
	OneShotUsage budget.Spent       `json:"oneshot_usage,omitzero"`
}

func printSessions(w io.Writer, rows []sessionRow, asJSON bool) error {
	if asJSON {
		return printJSON(w, nonNil(rows))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tTURNS\tEVENTS\tPARENT")
	for _, r := range rows {
		parent := ""
		if r.Parent != nil {
			parent = fmt.Sprintf("%s@%d", r.Parent.ID, r.Parent.Seq)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", r.ID, r.Created.Format("2006-01-02 15:04:05"), r.Turns, r.Events, parent)
	}
	return tw.Flush()
}

// showSession renders a log readably: turns, steps, messages and tool
// calls, one line each.
func showSession(w io.Writer, info session.Info, records []session.Record, prices map[string]budget.Price) error {
	w = termWriter{w}
	acc := budget.Tally(records, prices)
	turns := make(map[int]budget.Spent, len(acc.Turns))
	for _, ts := range acc.Turns {
		turns[ts.Turn] = ts.Spent
	}
	fmt.Fprintf(w, "session %s  created %s", info.ID, info.Created.Format("2006-01-02 15:04:05Z"))
	if info.By != "" {
		fmt.Fprintf(w, " by %s", info.By)
	}
	if info.Tenant != "" {
		fmt.Fprintf(w, "  tenant %s", info.Tenant)
	}
	if p := info.Parent; p != nil {
		fmt.Fprintf(w, "  fork of %s at seq %d", p.ID, p.Seq)
	}
	fmt.Fprintf(w, "  %d events\n", len(records))
	for _, r := range records {
		indent := ""
		if r.Turn() > 0 {
			indent = "  "
		}
		if r.Step() > 0 {
			indent = "    "
		}
		line := describeRecord(r)
		if line == "" {
			continue
		}
		if r.Type() == session.TypeTurnEnd {
			line += "  [" + describeSpent(turns[r.Turn()]) + "]"
		}
		fmt.Fprintf(w, "%5d %s%s\n", r.Seq(), indent, line)
	}
	turnsWord := "turns"
	if len(acc.Turns) == 1 {
		turnsWord = "turn"
	}
	fmt.Fprintf(w, "usage: %d %s, %s", len(acc.Turns), turnsWord, describeSpent(acc.Session))
	if acc.OneShots.Tokens() > 0 {
		fmt.Fprintf(w, " (one-shots: %s)", describeSpent(acc.OneShots))
	}
	fmt.Fprintln(w)
	if s := session.Suspended(records); s != nil {
		printPending(w, info.ID, s, nil)
	}
	printUnknown(w, info.ID, session.Unknown(records))
	return nil
}

// describers give the one line sessions show prints for each core type
// of record.
var describers = map[string]func(session.Record) string{
	session.TypeTurnStart:        describeTurnStart,
	session.TypeTurnEnd:          describeTurnEnd,
	session.TypeStepStart:        func(r session.Record) string { return fmt.Sprintf("step %d", r.Step()) },
	session.TypeStepEnd:          describeStepEnd,
	session.TypeUserMessage:      describeUserMessage,
	session.TypeRequestHeader:    describeRequestHeader,
	session.TypeRequestDigest:    describeRequestDigest,
	session.TypeRequestOneshot:   describeRequestOneshot,
	session.TypeRequestUsage:     describeRequestUsage,
	session.TypeStepUsage:        describeStepUsage,
	session.TypeAssistantChunk:   func(session.Record) string { return "" }, // shown by its assistant/message
	session.TypeAssistantMessage: describeAssistantMessage,
	session.TypeToolCall:         describeToolCall,
	session.TypeToolResult:       describeToolResult,
	session.TypeToolRetry:        describeToolRetry,
	session.TypeToolReconcile:    describeToolReconcile,
	session.TypeEndSeed:          func(session.Record) string { return "(end of inherited events)" },
	session.TypeApprovalRequest:  describeApprovalRequest,
	session.TypeApprovalDecision: describeApprovalDecision,
	session.TypeApprovalPolicy:   describeApprovalPolicy,
}

// describeRecord is the line for r: its type's describer's, or the type
// of a record it has none for (a plugin's).
func describeRecord(r session.Record) string {
	if describe, ok := describers[r.Type()]; ok {
		return describe(r)
	}
	return r.Type()
}

func describeTurnStart(r session.Record) string {
	d, _ := session.DecodeData[session.TurnStart](r)
	s := fmt.Sprintf("turn %d", r.Turn())
	if d.Continues != 0 {
		s += fmt.Sprintf(", continuing turn %d", d.Continues)
	}
	if d.By != "" {
		s += ", posted by " + d.By
	}
	return s
}

func describeTurnEnd(r session.Record) string {
	d, _ := session.DecodeData[session.TurnEnd](r)
	s := fmt.Sprintf("end of turn %d: %s", r.Turn(), d.Reason)
	if d.Error != "" {
		s += " (" + oneLine(d.Error, 100) + ")"
	}
	return s
}

func describeStepEnd(r session.Record) string {
	d, _ := session.DecodeData[session.StepEnd](r)
	s := "end of step: " + d.Finish
	if d.Usage != nil {
		s += fmt.Sprintf(" (tokens in %d, out %d)", d.Usage.Input, d.Usage.Output)
	}
	return s
}

func describeUserMessage(r session.Record) string {
	d, _ := session.DecodeData[session.UserMessage](r)
	if r.Surface().Op == session.OpReplace {
		sf := r.Surface()
		return fmt.Sprintf("summary (replaces %d..%d): %s", sf.Start, sf.End, oneLine(d.Content, 100))
	}
	return "user: " + oneLine(d.Content, 120)
}

func describeRequestHeader(r session.Record) string {
	d, _ := session.DecodeData[session.RequestHeader](r)
	return fmt.Sprintf("request header (%s): %s/%s, %d tools", d.Reason, d.Header.Provider, d.Header.Model, len(d.Header.Tools))
}

func describeRequestDigest(r session.Record) string {
	d, _ := session.DecodeData[session.Digest](r)
	return fmt.Sprintf("request sent: %d messages, sha256 %s", d.Messages, short(d.SHA256))
}

func describeRequestOneshot(r session.Record) string {
	d, _ := session.DecodeData[session.Oneshot](r)
	s := fmt.Sprintf("one-shot %s sent: %d messages, sha256 %s", d.Purpose, d.Messages, short(d.SHA256))
	if d.Header != nil {
		s += fmt.Sprintf(", %s/%s", d.Header.Provider, d.Header.Model)
	}
	return s
}

func describeRequestUsage(r session.Record) string {
	d, _ := session.DecodeData[session.Usage](r)
	return fmt.Sprintf("usage: tokens in %d, out %d", d.Input, d.Output)
}

func describeStepUsage(r session.Record) string {
	d, _ := session.DecodeData[session.Usage](r)
	return fmt.Sprintf("usage, for the step's end: tokens in %d, out %d", d.Input, d.Output)
}

func describeAssistantMessage(r session.Record) string {
	d, _ := session.DecodeData[session.AssistantMessage](r)
	var parts []string
	if d.Content != "" {
		parts = append(parts, "assistant: "+oneLine(d.Content, 120))
	}
	for _, c := range d.ToolCalls {
		parts = append(parts, fmt.Sprintf("assistant calls %s %s", c.Name, oneLine(c.Arguments, 80)))
	}
	if len(parts) == 0 {
		return "assistant: (empty)"
	}
	return strings.Join(parts, "; ")
}

func describeToolCall(r session.Record) string {
	d, _ := session.DecodeData[session.ToolCall](r)
	return fmt.Sprintf("tool call %s %s(%s)", d.ID, d.Name, oneLine(d.Arguments, 80))
}

func describeToolResult(r session.Record) string {
	d, _ := session.DecodeData[session.ToolResult](r)
	if d.Error != nil {
		return fmt.Sprintf("tool result %s: error %s %s", d.ID, d.Error.Code, oneLine(d.Error.Message, 80))
	}
	return fmt.Sprintf("tool result %s: %s", d.ID, oneLine(d.Content, 100))
}

func describeToolRetry(r session.Record) string {
	d, _ := session.DecodeData[session.ToolRetry](r)
	return fmt.Sprintf("retry of %s, whose outcome was unknown, with its idempotency key", d.ID)
}

func describeToolReconcile(r session.Record) string {
	d, _ := session.DecodeData[session.ToolReconcile](r)
	by := d.By
	if by == "" {
		by = "its retry"
	}
	if d.Error != nil {
		return fmt.Sprintf("reconciled %s by %s: error %s %s", d.ID, by, d.Error.Code, oneLine(d.Error.Message, 80))
	}
	return fmt.Sprintf("reconciled %s by %s: %s", d.ID, by, oneLine(d.Content, 100))
}

func describeApprovalRequest(r session.Record) string {
	d, _ := session.DecodeData[session.ApprovalRequest](r)
	s := fmt.Sprintf("approval asked for %s by %s", d.ID, d.By)
	if d.Reason != "" {
		// Not cut: a delegation's names the sub-agent's calls waiting.
		s += ": " + oneLine(d.Reason, -1)
	}
	return s
}

func describeApprovalDecision(r session.Record) string {
	d, _ := session.DecodeData[session.ApprovalDecision](r)
	verb := "denied"
	if d.Allow {
		verb = "allowed"
	}
	s := fmt.Sprintf("%s %s by %s", verb, d.ID, d.By)
	if d.Scope == session.ScopeSession {
		s += " (for this session)"
	}
	if d.Cites != 0 {
		s += fmt.Sprintf(" (per seq %d)", d.Cites)
	}
	if d.Reason != "" {
		s += ": " + oneLine(d.Reason, 80)
	}
	return s
}

func describeApprovalPolicy(r session.Record) string {
	d, _ := session.DecodeData[session.ApprovalPolicy](r)
	return fmt.Sprintf("approval policy of %s: %d rule(s), default %s", d.By, len(d.Rules), d.Default)
}

// oneLine puts s on one line, cut after n bytes (not cut when n < 0).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if n >= 0 && len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
