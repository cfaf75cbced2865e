package invariants

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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
	// SHA256 is the lower-case hex SHA-256 of the bytes verified: the
	// whole log, header line included.
	SHA256 string
	// Open is set when the log ends inside a turn (see [OpenTurn]).
	Open *OpenTurn
	// Proven counts what the checks established.
	Proven Proven
	// OneshotsUnderived are the seqs of the request/oneshot records
	// logged before one-shots carried their instruction (by an older
	// build): the log does not hold their requests, so their digests are
	// not checked. Not a violation: such a log verifies, and says so.
	OneshotsUnderived []int64
	// Checkpoints counts the integrity/checkpoint records, checked or
	// not; Integrity is what checking them established (nil unless an
	// [Audit] was given). Its findings make the log invalid.
	Checkpoints int
	Integrity   *Integrity
}

// Verdicts of a [Report], as `vigil verify --json` states them.
const (
	// VerdictValid: no rule is broken and every turn of the log is closed.
	VerdictValid = "valid"
	// VerdictOpen: no rule is broken, but the log ends inside a turn.
	VerdictOpen = "open"
	// VerdictInvalid: a rule is broken.
	VerdictInvalid = "invalid"
)

// Verdict is what the report proves of the log as a whole. A log that
// ends inside a turn is not invalid (a suspended turn waits there, and a
// crashed process that nothing repaired yet leaves its turn there), but
// it is not a complete session either: a log cut short after any of its
// lines reads the same, so only the open verdict says what is proven.
func (r *Report) Verdict() string {
	switch {
	case len(r.Violations) > 0, r.Integrity != nil && len(r.Integrity.Findings) > 0:
		return VerdictInvalid
	case r.Open != nil:
		return VerdictOpen
	}
	return VerdictValid
}

// OpenTurn is the turn a log ends inside.
type OpenTurn struct {
	Turn int `json:"turn"`
	// Step is the open step, 0 when none is.
	Step int `json:"step,omitempty"`
	// LastSeq is the seq of the log's last event.
	LastSeq int64 `json:"last_seq"`
	// Suspended: the open step waits for approval decisions (a legitimate
	// place for a log to end). Otherwise no process closed the turn: a
	// crash that no load has repaired yet, a session still being written,
	// or a log cut short.
	Suspended bool `json:"suspended"`
}

func (o *OpenTurn) String() string {
	s := fmt.Sprintf("turn %d is open: the log ends at seq %d", o.Turn, o.LastSeq)
	if o.Suspended {
		return s + " (step " + fmt.Sprint(o.Step) + " waits for approval decisions)"
	}
	return s + " (no process closed it: a crash not yet repaired, a session still being written, or a log cut short)"
}

// Proven counts what verifying a log established.
type Proven struct {
	// Steps counts the steps (step/start).
	Steps int `json:"steps"`
	// Requests counts the requests re-derived from the log: one per
	// request/digest, from the header in force and the fold before its
	// step.
	Requests int `json:"requests"`
	// Oneshots counts the one-shot requests re-derived from the log: one
	// per request/oneshot that logged its instruction.
	Oneshots int `json:"oneshots"`
	// DigestsMatched counts the re-derived requests (steps' and
	// one-shots') whose digest and message count equal the logged ones.
	DigestsMatched int `json:"digests_matched"`
	// Approvals counts the approval decisions checked against their
	// requests and the calls they let run.
	Approvals int `json:"approvals"`
	// Delegations counts the tool results that name a child session;
	// DelegationsChecked those checked against the child's log (only
	// `vigil verify --tree` reads the children).
	Delegations        int `json:"delegations"`
	DelegationsChecked int `json:"delegations_checked"`
	// DelegationsUnbound counts the delegations whose result carries no
	// root of the child's log (written before results bound their child):
	// --tree checks them, but nothing signed pins the child's records.
	DelegationsUnbound int `json:"delegations_unbound"`
	// ForkChecked is set when the log is a fork checked against its
	// parent's log (session.CheckFork: only `vigil verify --tree` reads
	// the parent).
	ForkChecked bool `json:"fork_checked,omitempty"`
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
func Verify(r io.Reader) (*Report, error) { return VerifyAudited(r, nil) }

// VerifyAudited is [Verify] that also checks the log's signed
// checkpoints, and its anchors, with audit (none when nil): the
// findings are in Report.Integrity.
func VerifyAudited(r io.Reader, audit *Audit) (*Report, error) {
	sum := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(r, sum), 1<<16)
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
	var au *auditor
	if audit != nil {
		au = newAuditor(audit, info, head)
	}

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
		if au != nil {
			au.line(int64(len(events)), line, rec)
		}
		if err != nil {
			v := decodeViolation(err)
			if v == nil {
				return rep, lineError(lineNo, err)
			}
			events = append(events, event{refused: v})
			continue
		}
		if rec.Type() == session.TypeCheckpoint {
			rep.Checkpoints++
		}
		events = append(events, event{rec: rec})
	}
	if au != nil {
		rep.Integrity = au.finish()
	}
	rep.Events = len(events)
	rep.SHA256 = hex.EncodeToString(sum.Sum(nil))
	v := newVerifier(info.ID, len(events))
	for _, e := range events {
		v.event(e)
	}
	v.finish(rep)
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
	case session.TypeToolRetry:
		return RuleToolRetry
	case session.TypeToolReconcile:
		return RuleToolReconcile
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

// verifier runs the append rules and request-digest over the events of
// a log, in order, and counts what they prove. After a violation the
// event is still applied, so later events are judged against the log as
// it stands.
type verifier struct {
	id      string
	out     []Violation
	t       *trace
	fold    *session.Fold
	records []session.Record
	// stepMsgs is the fold before the open step's step/start.
	stepMsgs []session.Message
	// digested: the open step has its request/digest; unproven: its
	// model output without one was reported.
	digested, unproven bool
	proven             Proven
	// underived are the one-shots logged without their instruction.
	underived []int64
}

func newVerifier(id string, n int) *verifier {
	return &verifier{id: id, t: newTrace(), fold: session.NewFold(), records: make([]session.Record, 0, n)}
}

func (v *verifier) report(x *Violation) {
	x.Session = v.id
	v.out = append(v.out, *x)
}

func (v *verifier) event(e event) {
	t := v.t
	if x := e.refused; x != nil {
		// The line is not a record: nothing to apply but its seq,
		// so that the next line is judged on its own.
		if x.Rule != RuleSeqOrder && x.Seq != t.next {
			v.report(violation(RuleSeqOrder, x.Seq, "seq %d where %d was next", x.Seq, t.next))
		}
		v.report(x)
		t.next = max(t.next, x.Seq) + 1
		return
	}
	r := e.rec
	before := v.records
	v.records = append(v.records, r)
	if x := t.validate(r); x != nil {
		v.report(x)
	}
	t.apply(r)
	v.prove(before, r)
	// A fold error is reported by surface-replace; the fold keeps its
	// surface.
	_ = v.fold.Add(r)
}

// prove runs request-digest on r, whose log before it is before, and
// counts what r proves.
func (v *verifier) prove(before []session.Record, r session.Record) {
	switch r.Type() {
	case session.TypeStepStart:
		v.proven.Steps++
		v.stepMsgs = v.fold.Messages()
		v.digested, v.unproven = false, false
	case session.TypeRequestDigest:
		if v.digested {
			v.report(violation(RuleRequestDigest, r.Seq(), "a second request/digest in turn %d step %d: a step sends one request", r.Turn(), r.Step()))
		}
		v.digested = true
		derived, x := requestDigest(before, v.stepMsgs, r)
		if derived {
			v.proven.Requests++
		}
		if x != nil {
			v.report(x)
		} else {
			v.proven.DigestsMatched++
		}
	case session.TypeRequestOneshot:
		x, derived := oneshotDigest(before, r)
		if !derived {
			v.underived = append(v.underived, r.Seq())
			break
		}
		v.proven.Oneshots++
		if x != nil {
			v.report(x)
		} else {
			v.proven.DigestsMatched++
		}
	case session.TypeAssistantChunk, session.TypeAssistantMessage:
		// The loop logs a step's digest before it hands the request to
		// the provider, so before any of the model's output: output
		// without one is a reply to a request the log does not prove.
		if !v.digested && !v.unproven && v.t.stepOpen {
			v.unproven = true
			v.report(violation(RuleRequestDigest, r.Seq(), "%s in turn %d step %d, which has no request/digest: nothing proves what the model was sent", r.Type(), r.Turn(), r.Step()))
		}
	case session.TypeApprovalDecision:
		v.proven.Approvals++
	case session.TypeToolResult:
		if res, err := payload[session.ToolResult](&v.t.dec, r); err == nil && res.Child != nil {
			v.proven.Delegations++
			if res.Child.Root == "" {
				v.proven.DelegationsUnbound++
			}
		}
	}
}

// finish completes rep: the violations, what was proven, and the turn
// the log ends inside, if any.
func (v *verifier) finish(rep *Report) {
	rep.Violations = v.out
	rep.Proven = v.proven
	rep.OneshotsUnderived = v.underived
	t := v.t
	if !t.turnOpen {
		return
	}
	o := &OpenTurn{Turn: t.turn, LastSeq: t.next - 1}
	if t.stepOpen {
		o.Step = t.step
	}
	o.Suspended = session.Suspended(v.records) != nil
	rep.Open = o
}

// requestDigest: the digest a step recorded equals the digest of the
// request re-derived from the log: the latest header before it and the
// fold of the log before the step's step/start. derived says the request
// could be re-derived (its digest then matched unless a violation says
// otherwise).
func requestDigest(before []session.Record, msgs []session.Message, r session.Record) (derived bool, _ *Violation) {
	d, err := session.DecodeData[session.Digest](r)
	if err != nil {
		return false, violation(RuleRequestDigest, r.Seq(), "request/digest data: %v", err)
	}
	h, ok := session.DeriveHeader(before)
	if !ok {
		return false, violation(RuleRequestDigest, r.Seq(), "no request/header before the request")
	}
	return true, digestMatches(r, h, msgs, d.SHA256, d.Messages)
}

// digestMatches: the sha256 and messages a record states equal those of
// the request re-derived from the log (h, msgs).
func digestMatches(r session.Record, h session.Header, msgs []session.Message, sha string, n int) *Violation {
	if n != len(msgs) {
		return &Violation{Rule: RuleRequestDigest, Seq: r.Seq(), Index: -1,
			Message:  "the request sent had another number of messages than the log re-derives",
			Expected: fmt.Sprint(len(msgs)), Actual: fmt.Sprint(n)}
	}
	if got := session.RequestDigest(h, msgs); got != sha {
		return &Violation{Rule: RuleRequestDigest, Seq: r.Seq(), Index: -1,
			Message:  "the request sent differs from the request re-derived from the log",
			Expected: got, Actual: sha}
	}
	return nil
}

// oneshotDigest: a one-shot's sha256 and messages equal those of its
// request re-derived from the log — its logged header, the projections of
// its sources, its logged instruction (session.OneshotRequest). derived is
// false for a one-shot of an older build, which logged no instruction:
// its request is not in the log to check.
func oneshotDigest(before []session.Record, r session.Record) (v *Violation, derived bool) {
	o, err := session.DecodeData[session.Oneshot](r)
	if err != nil {
		return violation(RuleRequestDigest, r.Seq(), "request/oneshot data: %v", err), true
	}
	h, msgs, derived, err := session.OneshotRequest(before, r)
	if err != nil {
		return violation(RuleRequestDigest, r.Seq(), "request/oneshot: %v", err), true
	}
	if !derived {
		return nil, false
	}
	return digestMatches(r, h, msgs, o.SHA256, o.Messages), true
}
