package invariants

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vigil-run/vigil/session"
)

// Report is the result of verifying one stored log.
type Report struct {
	// Session is the id from the log's header line.
	Session string
	// Events is how many events were checked.
	Events int
	// Violations are the broken rules, in log order.
	Violations []Violation
}

// VerifyFile verifies the log stored at path. See [Verify].
func VerifyFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	defer f.Close()
	return Verify(f)
}

// Verify runs the append rules and request-digest over a stored JSONL log,
// offline, with the rule code of the runtime plugin. A line that cannot be
// read as a record (including a torn last line) is an error naming the
// line, a *session.CorruptError; a log of another version or with an
// unknown type is refused with the session package's errors.
func Verify(r io.Reader) (*Report, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	rep := &Report{}
	lineNo := 0
	next := func() ([]byte, error) {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return nil, err
		}
		lineNo++
		if line[len(line)-1] != '\n' {
			return nil, &session.CorruptError{Line: lineNo, Err: session.ErrTornTail}
		}
		return bytes.TrimSuffix(line, []byte("\n")), nil
	}
	head, err := next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &session.CorruptError{Line: 1, Err: fmt.Errorf("%w: empty log", session.ErrMalformed)}
		}
		return nil, err
	}
	info, err := session.DecodeHeader(head)
	if err != nil {
		return nil, lineError(1, err)
	}
	rep.Session = info.ID

	var events []event
	for {
		line, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rep, err
		}
		rec, err := session.DecodeRecord(line)
		if err != nil {
			v := decodeViolation(err)
			if v == nil {
				return rep, lineError(lineNo, err)
			}
			events = append(events, event{refused: v})
			continue
		}
		events = append(events, event{rec: rec})
	}
	rep.Events = len(events)
	rep.Violations = check(info.ID, events)
	return rep, nil
}

// event is one line of a log: a record, or the violation of a line the
// decoder refused for a rule of the contract.
type event struct {
	rec     session.Record
	refused *Violation
}

// decodeViolation is the violation of a record line the decoder refused
// because it breaks an append rule on its own (a request/header outside a
// turn: turn-enclosure), nil for any other error. The record checks of
// the session package catch these before the trace sees them; verify
// names their rule as it names every other.
func decodeViolation(err error) *Violation {
	var re *session.RecordError
	if !errors.As(err, &re) {
		return nil
	}
	var rule string
	switch {
	case errors.Is(err, session.ErrInvalidScope):
		rule = scopeRule(re)
	case errors.Is(err, session.ErrInvalidReplace):
		rule = RuleSurfaceReplace
	case errors.Is(err, session.ErrNoCallID):
		rule = RuleToolPairing
	case errors.Is(err, session.ErrDuplicateSeq):
		rule = RuleSeqOrder
	}
	if rule == "" {
		return nil
	}
	// The decoder's message names the seq; the violation carries it.
	msg := re.Err.Error()
	if _, after, ok := strings.Cut(msg, fmt.Sprintf("seq %d: ", re.Seq)); ok {
		msg = after
	}
	return violation(rule, re.Seq, "%s", msg)
}

// scopeRule is the rule a turn or step that does not fit the event type
// breaks.
func scopeRule(re *session.RecordError) string {
	switch re.Type {
	case session.TypeRequestHeader:
		return RuleTurnEnclosure
	case session.TypeRequestDigest:
		if re.Turn == 0 {
			return RuleTurnEnclosure
		}
		return RuleStepScope
	case session.TypeTurnStart, session.TypeTurnEnd:
		return RuleTurnNesting
	case session.TypeStepStart, session.TypeStepEnd:
		return RuleStepNesting
	case session.TypeEndSeed:
		return RuleTurnEnclosure // the end of inherited events is outside any turn
	}
	return RuleStepScope
}

func lineError(line int, err error) error {
	var ce *session.CorruptError
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, session.ErrVersion) || errors.Is(err, session.ErrUnknownType) {
		return fmt.Errorf("line %d: %w", line, err)
	}
	return &session.CorruptError{Line: line, Err: err}
}

// check runs the append rules and request-digest over records. After a
// violation the event is still applied, so later events are judged
// against the log as it stands.
func check(id string, events []event) []Violation {
	var out []Violation
	t := newTrace()
	fold := session.NewFold()
	var stepMsgs []session.Message // the fold before the open step's step/start
	records := make([]session.Record, 0, len(events))
	for _, e := range events {
		if v := e.refused; v != nil {
			// The line is not a record: nothing to apply but its seq,
			// so that the next line is judged on its own.
			v.Session = id
			if v.Rule != RuleSeqOrder && v.Seq != t.next {
				out = append(out, Violation{Rule: RuleSeqOrder, Session: id, Seq: v.Seq, Index: -1,
					Message: fmt.Sprintf("seq %d where %d was next", v.Seq, t.next)})
			}
			out = append(out, *v)
			t.next = max(t.next, v.Seq) + 1
			continue
		}
		r := e.rec
		i := len(records)
		records = append(records, r)
		if v := t.validate(r); v != nil {
			v.Session = id
			out = append(out, *v)
		}
		t.apply(r)
		switch r.Type() {
		case session.TypeStepStart:
			stepMsgs = fold.Messages()
		case session.TypeRequestDigest:
			if v := requestDigest(records[:i], stepMsgs, r); v != nil {
				v.Session = id
				out = append(out, *v)
			}
		}
		if err := fold.Add(r); err != nil {
			// Reported by surface-replace; the fold keeps its surface.
			continue
		}
	}
	return out
}

// requestDigest: the digest a step recorded equals the digest of the
// request re-derived from the log: the latest header before it and the
// fold of the log before the step's step/start.
func requestDigest(before []session.Record, msgs []session.Message, r session.Record) *Violation {
	d, err := session.DecodeData[session.Digest](r)
	if err != nil {
		return violation(RuleRequestDigest, r.Seq(), "request/digest data: %v", err)
	}
	h, ok := session.DeriveHeader(before)
	if !ok {
		return violation(RuleRequestDigest, r.Seq(), "no request/header before the request")
	}
	if d.Messages != len(msgs) {
		return &Violation{Rule: RuleRequestDigest, Seq: r.Seq(), Index: -1,
			Message:  "the request sent had another number of messages than the log re-derives",
			Expected: fmt.Sprint(len(msgs)), Actual: fmt.Sprint(d.Messages)}
	}
	if got := session.RequestDigest(h, msgs); got != d.SHA256 {
		return &Violation{Rule: RuleRequestDigest, Seq: r.Seq(), Index: -1,
			Message:  "the request sent differs from the request re-derived from the log",
			Expected: got, Actual: d.SHA256}
	}
	return nil
}
