package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/approval"
	"github.com/vigil-run/vigil/session/live"
)

// StepComparison pairs one step's request digest in a recorded log with
// the digest of the same step when the log is run again.
type StepComparison struct {
	Turn     int    `json:"turn"`
	Step     int    `json:"step"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Same     bool   `json:"same"`
}

// Rerun is the result of [Run].
type Rerun struct {
	// Session is the session the log was run again on.
	Session *live.Session
	// Steps compares every step's request, in order.
	Steps []StepComparison
	// Errors are the errors the turns ended with, in order. A turn that
	// failed in the recording fails again (the provider serves the
	// failure); a listener's refusal is an error too, and so is a
	// [*DivergedError], after which the rerun stopped.
	Errors []error
}

// Identical reports whether every recorded request was sent again, the
// same, and no other, and the rerun followed the recording to its end
// (a log with no request, say one whose every turn died before its first
// step, replays identically).
func (r *Rerun) Identical() bool {
	for _, err := range r.Errors {
		if errors.Is(err, ErrDiverged) {
			return false
		}
	}
	for _, s := range r.Steps {
		if !s.Same {
			return false
		}
	}
	return true
}

// DivergedError says where a rerun stopped following its recording: the
// loop logged another event than the recording has at that point, or
// stopped before it.
type DivergedError struct {
	// Seq is the recorded event's seq (-1 past the recording's end).
	Seq        int64
	Turn, Step int
	// Recorded and Replayed are the event types ("" for none).
	Recorded, Replayed string
}

func (e *DivergedError) Error() string {
	at := fmt.Sprintf("turn %d", e.Turn)
	if e.Step > 0 {
		at += fmt.Sprintf(" step %d", e.Step)
	}
	switch {
	case e.Replayed == session.TypeStepStart && (e.Recorded == session.TypeTurnEnd || e.Recorded == ""):
		return fmt.Sprintf("replay: %s: the recording ran out before the turn ended: the rerun started this step, the recording has none", at)
	case e.Replayed == "":
		return fmt.Sprintf("replay: %s: the rerun stopped where the recording has %s (seq %d)", at, e.Recorded, e.Seq)
	case e.Recorded == "":
		return fmt.Sprintf("replay: %s: the rerun logged %s past the end of the recording", at, e.Replayed)
	}
	return fmt.Sprintf("replay: %s: the rerun logged %s where the recording has %s (seq %d)", at, e.Replayed, e.Recorded, e.Seq)
}

// Is makes a DivergedError match ErrDiverged.
func (e *DivergedError) Is(target error) bool { return target == ErrDiverged }

// blockedEnd parses the error of a turn/end of reason blocked, as
// agentloop.BlockedError writes it.
var blockedEnd = regexp.MustCompile(`^blocked by plugin ("(?:[^"\\]|\\.)*"): (\S+) refused: (.*)$`)

// blocker is a plugin named as the one whose veto ended a recorded turn;
// it refuses the one event the recording shows refused.
type blocker struct {
	name string
	sess *live.Session
	seq  int64
	typ  string
	why  string
}

func (b *blocker) Name() string { return b.name }

func (b *blocker) Apply(c *bus.Context, _ any) error {
	bus.Veto.On(c, func(_ context.Context, d bus.Dispatch) error {
		if cm, ok := d.Payload.(live.Commit); ok && cm.Session() == b.sess && cm.Record().Seq() == b.seq && cm.Record().Type() == b.typ {
			return errors.New(b.why)
		}
		return nil
	})
	return nil
}

// aborted reports whether the recorded turn [i, end) was aborted, with
// the cause it ended with and the call after which it was cancelled (""
// when the cancel cut its failed step's stream): the last call that
// started, or that a continuation ran again (tool/retry).
func aborted(recs []session.Record, i, end int) (after string, cause error, ok bool) {
	te, err := session.DecodeData[session.TurnEnd](recs[end-1])
	if err != nil || te.Reason != session.ReasonAborted {
		return "", nil, false
	}
	for _, r := range recs[i:end] {
		if s, err := session.DecodeData[session.ToolStart](r); err == nil && r.Type() == session.TypeToolStart {
			after = s.ID
		}
		if s, err := session.DecodeData[session.ToolRetry](r); err == nil && r.Type() == session.TypeToolRetry {
			after = s.ID
		}
		if se, err := session.DecodeData[session.StepEnd](r); err == nil && r.Type() == session.TypeStepEnd && se.Finish == session.FinishError {
			return "", errors.New(te.Error), true // cancelled in this step's stream
		}
	}
	return after, errors.New(te.Error), true
}

// abortedStream serves st's chunks and then cancels the turn, the way
// the recorded stream ended.
func abortedStream(ctx context.Context, p *Provider, st Step, abort func()) (agentloop.Stream, error) {
	st.Err = ""
	inner, err := p.serve(ctx, st)
	if err != nil {
		return nil, err
	}
	return func(yield func(agentloop.Chunk, error) bool) {
		for c, err := range inner {
			if !yield(c, err) || err != nil {
				return
			}
		}
		abort()
		yield(agentloop.Chunk{}, context.Cause(ctx))
	}, nil
}

// failedBeforeCrash marks the steps of the recorded turn [i, crash) whose
// stream failed before the process died: the loop answered their calls
// "the turn ended before the tool ran: <why>", or logged their step/end
// with finish error.
func (x *rerun) failedBeforeCrash(i, crash int) {
	why := map[[2]int]string{}
	for _, r := range x.recs[i:crash] {
		at := [2]int{r.Turn(), r.Step()}
		switch r.Type() {
		case session.TypeToolResult:
			if res, err := session.DecodeData[session.ToolResult](r); err == nil && res.Error != nil && res.Error.Code == session.CodeToolNotStarted {
				if m, ok := strings.CutPrefix(res.Error.Message, "the turn ended before the tool ran: "); ok {
					why[at] = m
				}
			}
		case session.TypeStepEnd:
			if e, err := session.DecodeData[session.StepEnd](r); err == nil && e.Finish == session.FinishError && why[at] == "" {
				why[at] = "the recorded stream failed"
			}
		}
	}
	for at, w := range why {
		if st := x.byStep[at]; st != nil && st.Err == "" {
			st.Err = w
		}
	}
}

// block mounts a blocker for the recorded turn [i, limit) when a veto
// ended it, and returns how to dispose it. ended: the turn/end at
// limit-1 is the loop's (else the process died before it, and the veto
// is known from the results it closed the step with).
func (x *rerun) block(i, limit int, ended bool) (func(), error) {
	none := func() {}
	m := blockedEnd.FindStringSubmatch(x.vetoMessage(i, limit, ended))
	if m == nil {
		return none, nil
	}
	name, err := strconv.Unquote(m[1])
	if err != nil {
		return none, nil
	}
	p := x.vetoedAt(i, limit, ended)
	if p < 0 {
		return none, nil
	}
	b := &blocker{name: name, sess: x.sess, seq: int64(x.sess.Len() + p - i), typ: m[2], why: m[3]}
	f, err := x.c.Plugin(b, nil)
	if err != nil {
		return nil, fmt.Errorf("replay: the veto of %s: %w", name, err)
	}
	return func() { _ = f.Dispose() }, nil
}

// vetoMessage is the error a veto ended the recorded turn [i, limit)
// with: its turn/end's, when ended and blocked, else the first that a
// result the loop closed the step with gives as why its tool did not
// run. Empty: no veto ended it.
func (x *rerun) vetoMessage(i, limit int, ended bool) string {
	if e, err := session.DecodeData[session.TurnEnd](x.recs[limit-1]); ended && err == nil && e.Reason == session.ReasonBlocked {
		if e.Error != "" {
			return e.Error
		}
	}
	for _, r := range x.recs[i:limit] {
		if res, err := session.DecodeData[session.ToolResult](r); err == nil && r.Type() == session.TypeToolResult && res.Error != nil {
			if m, ok := strings.CutPrefix(res.Error.Message, "the tool did not run: "); ok && blockedEnd.MatchString(m) {
				return m
			}
		}
	}
	return ""
}

// vetoedAt finds where in the recorded turn [i, limit) the refused event
// would have been: the loop closed the turn from there, as CloseTail
// would — all of it, or, when its process died on the way, a prefix of
// its closers before turn/end. -1: nowhere.
func (x *rerun) vetoedAt(i, limit int, ended bool) int {
	for k := i + 1; k < limit; k++ {
		closers := session.CloseTail(x.recs[:k])
		if ended && len(closers) != limit-k || !ended && len(closers)-1 < limit-k {
			continue
		}
		if x.closedBy(k, closers[:limit-k]) {
			return k
		}
	}
	return -1
}

// closedBy reports whether the records from k on are closers, event for
// event. The loop's closers say why the call did not run; their calls
// and codes are repair's.
func (x *rerun) closedBy(k int, closers []session.Event) bool {
	for n, ev := range closers {
		r := x.recs[k+n]
		if ev.Type != r.Type() {
			return false
		}
		if res, ok := ev.Data.(session.ToolResult); ok {
			got, err := session.DecodeData[session.ToolResult](r)
			if err != nil || got.ID != res.ID || got.Error == nil || got.Error.Code != res.Error.Code {
				return false
			}
		}
	}
	return true
}

// errCrashed is the veto that stops a rerun's loop where the recorded
// process died.
var errCrashed = errors.New("replay: the recorded process stopped here")

// Run runs the recorded log again on a new session of mgr, through the
// real loop, with agents on c, and compares the requests.
//
// The log is walked in order. Each turn is run again (agentloop's Run,
// Continue for a continuation turn, Resume once a suspended step got its
// recorded decisions) by an agent whose config is the recorded request
// header in force at the turn's first step, with a new agent wherever the
// recording shows a new loop instance (a request/header of reason initial
// or resume; or a turn that ended at a step limit its instance does not
// have, which another process resumed at a suspended step and so logged
// no header), so the loop logs its headers where the original did. At
// each step the agent is offered the tools the recording's header had in
// force at that step (a hot reload, an MCP tool-list change) and its
// provider names itself as that header does; the model answers with the
// recorded stream of the same turn and step, and each tool with its
// recorded results in order; a continuation is offered at its start the
// tools that make it run again the calls the recording shows it retried
// (tool/retry), and no other. Events outside turns (a compaction, an
// approval policy) are copied, their sources and surface range
// translated to the new log's seqs. A turn the recorded process died in
// (closed by crash repair) is run up to where the recording stops, then
// closed the way repair closes it.
//
// Ignorable plugin records are skipped wherever they stand, as a reader
// without their plugin skips them (they never change a request): the
// rerun follows the rest, and errors name the recorded seqs.
//
// The new log must follow the recording event for event: where it does
// not, the rerun stops with a [*DivergedError] in Errors. Steps compares
// the request digests. Mount the invariants plugin on c to have every
// request checked against a fresh fold on the way.
//
// Approvals are replayed as recorded: a call the recording asked about
// is asked again (same asker, same reason), one the policy in force
// denied is denied again, the others run, and a suspended turn gets the
// recorded decisions again, in their order, and resumes. A turn the
// recording left waiting is left waiting (its error matches
// agentloop.ErrSuspended).
func Run(ctx context.Context, c *bus.Context, mgr *live.Manager, recorded []session.Record) (*Rerun, error) {
	recorded, orig, err := readable(recorded)
	if err != nil {
		return nil, err
	}
	rec, err := FromRecords(recorded)
	if err != nil {
		return nil, err
	}
	sess, err := mgr.Create(ctx)
	if err != nil {
		return nil, err
	}
	x := newRerun(c, rec, recorded, sess)
	x.orig = orig
	defer x.closeAgent()
	// Prepended: the recording's answer comes before any policy mounted on c.
	defer agentloop.ToolApprove.On(c, func(_ context.Context, q *agentloop.ApprovalQuery) (agentloop.Verdict, error) {
		if q.Session != sess {
			return agentloop.Verdict{}, nil
		}
		return x.ap.verdict(q.Call), nil
	}, bus.Prepend)()
	// Prepended: the recorded result comes before any tool runs.
	defer agentloop.ToolExecute.On(c, func(ctx context.Context, inv *agentloop.ToolInvocation, next bus.Next[*agentloop.ToolInvocation, agentloop.ToolOutput]) (agentloop.ToolOutput, error) {
		if inv.Session != sess.ID() {
			return next(ctx, inv)
		}
		out := x.box.execute(inv)
		if x.abort != nil && inv.Call.ID == x.abortAfter {
			x.abort() // the turn was cancelled while this call ran
		}
		return out, nil
	}, bus.Prepend)()
	// A turn a budget ended is refused at the same step with the recorded
	// error, whatever limits are mounted now (a wall clock cannot fire the
	// same way twice).
	stops := map[[2]int]string{}
	for _, st := range session.BudgetStops(recorded) {
		stops[[2]int{st.Turn, st.Step}] = st.Error
	}
	// A step a budget capped is capped to its recorded max_tokens again.
	defer agentloop.StepBegin.On(c, func(_ context.Context, sc *agentloop.StepCheck) error {
		if sc.Session != sess {
			return nil
		}
		if msg, ok := stops[[2]int{sc.Turn, sc.Step}]; ok {
			return &agentloop.BudgetError{Limit: "replay", Message: msg}
		}
		if st := x.byStep[[2]int{sc.Turn, sc.Step}]; st != nil && st.Header.MaxTokens > 0 {
			sc.Cap(st.Header.MaxTokens)
		}
		return nil
	}, bus.Prepend)()
	// The fence: no event of the session at or past it is committed.
	defer bus.Veto.On(c, func(_ context.Context, d bus.Dispatch) error {
		if cm, ok := d.Payload.(live.Commit); ok && cm.Session() == sess && x.fence >= 0 && cm.Record().Seq() >= x.fence {
			return errCrashed
		}
		return nil
	})()
	out := &Rerun{Session: sess}
	err = x.walk(ctx, out)
	out.Steps = compareDigests(recorded, sess.Records())
	if err != nil {
		return out, err
	}
	return out, nil
}

// rerun is the state of one [Run].
type rerun struct {
	c   *bus.Context
	rec *Recording
	// recs is the recording without its ignorable records (readable);
	// orig maps its indexes to the recorded seqs.
	recs []session.Record
	orig []int64
	sess *live.Session
	ap   *approvals
	box  results
	safe map[string]bool // tools that ran in concurrent batches
	// delegations are the tools the recording shows were sub-agents.
	delegations map[string]bool
	prov        *stepProvider
	byStep      map[[2]int]*Step
	// seqs maps a recorded record's index to the seq of its counterpart
	// in the new log (-1: none).
	seqs  []int64
	fence int64 // -1: none
	agent *agentloop.Agent
	cfg   agentloop.Config
	// schema is the output schema of cfg as the header logs it.
	schema json.RawMessage
	// abort cancels the turn being re-run, which the recording shows
	// aborted, after the call abortAfter ran (or its failed step's
	// stream, when no call started).
	abort      func()
	abortAfter string
	// inPlace: the agent logs denials in the model's call order, as the
	// segment of the recording it reruns shows (see denialsInCallOrder).
	inPlace bool
	// cont is the recorded segment [cont[0], cont[1]) of the continuation
	// being run, nil when none is: at its start, the tools offered are
	// those of its retries (see retryTools).
	cont *[2]int
}

func newRerun(c *bus.Context, rec *Recording, recs []session.Record, sess *live.Session) *rerun {
	x := &rerun{c: c, rec: rec, recs: recs, sess: sess, ap: recordedApprovals(recs), box: recordedResults(recs), safe: concurrencySafe(recs), delegations: delegations(recs),
		byStep: map[[2]int]*Step{}, seqs: make([]int64, len(recs)), fence: -1}
	for i := range rec.Steps {
		s := &rec.Steps[i]
		x.byStep[[2]int{s.Turn, s.Step}] = s
	}
	for i := range x.seqs {
		x.seqs[i] = -1
	}
	x.prov = &stepProvider{x: x, p: New(rec)}
	return x
}

// seqOf is the seq in the recorded log of r, a record of x.recs.
func (x *rerun) seqOf(r session.Record) int64 { return seqIn(x.orig, r.Seq()) }

func (x *rerun) closeAgent() {
	if x.agent != nil {
		_ = x.agent.Close()
		x.agent = nil
	}
}

// walk follows the recording from its first record.
func (x *rerun) walk(ctx context.Context, out *Rerun) error {
	for i := 0; i < len(x.recs); {
		r := x.recs[i]
		var err error
		switch {
		case r.Type() == session.TypeEndSeed:
			i++
		case r.Turn() == 0:
			err = x.copy(ctx, i)
			i++
		case r.Type() == session.TypeTurnStart:
			i, err = x.entry(ctx, i, out)
		case external(r):
			i, err = x.decide(ctx, i)
		default:
			// Inside a turn, after the decisions of a suspended step.
			i, err = x.entry(ctx, i, out)
		}
		if err != nil {
			var de *DivergedError
			if errors.As(err, &de) {
				out.Errors = append(out.Errors, err)
				return nil
			}
			return err
		}
	}
	return nil
}

// external reports an approval decision a person made (the loop logs
// the ones a session-scoped allow covers).
func external(r session.Record) bool {
	if r.Type() != session.TypeApprovalDecision {
		return false
	}
	d, err := session.DecodeData[session.ApprovalDecision](r)
	return err == nil && d.By != session.SessionRuleBy
}

// copy appends the recorded event at i, outside any turn, with its seqs
// translated.
func (x *rerun) copy(ctx context.Context, i int) error {
	r := x.recs[i]
	ev := session.Event{Type: r.Type(), Ignorable: r.Ignorable(), Data: json.RawMessage(r.Data())}
	var err error
	if ev.Sources, err = x.translate(r.Sources()); err != nil {
		return fmt.Errorf("replay: seq %d: %w", x.seqOf(r), err)
	}
	if sf := r.Surface(); sf.Op == session.OpReplace {
		ends, err := x.translate([]int64{sf.Start, sf.End})
		if err != nil {
			return fmt.Errorf("replay: seq %d: %w", x.seqOf(r), err)
		}
		sf.Start, sf.End = ends[0], ends[1]
		ev.Surface = &sf
	}
	got, err := x.sess.Append(ctx, ev)
	if err != nil {
		return fmt.Errorf("replay: copy seq %d (%s): %w", x.seqOf(r), r.Type(), err)
	}
	x.seqs[i] = got.Seq()
	return nil
}

func (x *rerun) translate(seqs []int64) ([]int64, error) {
	if seqs == nil {
		return nil, nil
	}
	out := make([]int64, len(seqs))
	for k, s := range seqs {
		if s < 0 || s >= int64(len(x.seqs)) || x.seqs[s] < 0 {
			return nil, fmt.Errorf("seq %d has no counterpart in the rerun", s)
		}
		out[k] = x.seqs[s]
	}
	return out, nil
}

// decide appends the recorded decision at i, and returns the index of
// the record after it and the decisions it made for the calls a
// session-scoped allow covers.
func (x *rerun) decide(ctx context.Context, i int) (int, error) {
	r := x.recs[i]
	d, err := session.DecodeData[session.ApprovalDecision](r)
	if err != nil {
		return 0, fmt.Errorf("replay: seq %d: %w", x.seqOf(r), err)
	}
	base := x.sess.Len()
	if _, err := agentloop.Decide(ctx, x.sess, d.ID, agentloop.Decision{Allow: d.Allow, By: d.By, Reason: d.Reason, Scope: d.Scope}); err != nil {
		return 0, fmt.Errorf("%w (the decision could not be made again: %v)", &DivergedError{Seq: x.seqOf(r), Turn: r.Turn(), Step: r.Step(), Recorded: r.Type()}, err)
	}
	end := i + x.sess.Len() - base
	if end > len(x.recs) {
		end = len(x.recs)
	}
	return end, x.align(i, end, base)
}

// entry runs the loop from the recorded record at i (a turn/start, or
// the first record after a suspended step's decisions) until the
// recording's turn ends, suspends or its process died, and returns the
// index of the record after.
func (x *rerun) entry(ctx context.Context, i int, out *Rerun) (int, error) {
	end := turnEnd(x.recs, i)
	stop := x.firstExternal(i, end)
	split := x.resumedAt(i, stop)
	if split < 0 {
		split = x.handedAt(i, stop)
	}
	if split > 0 {
		stop = split
	}
	crash := -1
	if stop == end {
		crash = x.crashAt(i, end)
		if crash >= 0 {
			stop = crash
			x.failedBeforeCrash(i, crash)
		}
		// A turn a plugin's veto ended (a policy, a budget): the same
		// plugin name refuses the same event where the recording shows
		// it refused.
		undo, err := x.block(i, stop, stop == end)
		if err != nil {
			return 0, err
		}
		defer undo()
	}
	if err := x.agentFor(i, stop); err != nil {
		return 0, err
	}
	base := x.sess.Len()
	err := x.runSegment(ctx, i, stop, end)
	switch {
	case err == nil:
	case (crash >= 0 || split >= 0) && errors.Is(err, errCrashed):
		// The loop was stopped where the recorded process died; this
		// agent's memory of the session is not the next process's.
		x.closeAgent()
	case errors.Is(err, agentloop.ErrSuspended) && stop < end:
	default:
		out.Errors = append(out.Errors, err)
	}
	if err := x.align(i, stop, base); err != nil {
		return 0, err
	}
	if crash >= 0 && crash < end {
		if err := x.repair(ctx, x.recs[i].Turn(), stop, end); err != nil {
			return 0, err
		}
		return end, nil
	}
	return stop, nil
}

// firstExternal is the index of the first record after i in [i, end)
// that the loop does not log (see external), or end.
func (x *rerun) firstExternal(i, end int) int {
	for k := i + 1; k < end; k++ {
		if external(x.recs[k]) {
			return k
		}
	}
	return end
}

// resumedAt finds, in the recorded records [i, stop), a header of a new
// loop instance after the turn's first step: the process died with the
// step's calls decided, and another resumed it. It returns where the
// first loop stopped (the end of its suspended step), or -1.
func (x *rerun) resumedAt(i, stop int) int {
	for k, steps := i, 0; k < stop; k++ {
		r := x.recs[k]
		if r.Type() == session.TypeStepStart {
			steps++
		}
		if r.Type() != session.TypeRequestHeader || steps < 2 {
			continue
		}
		if h, err := session.DecodeData[session.RequestHeader](r); err == nil && h.Reason != session.HeaderChange {
			for p := k; p > i; p-- {
				if session.Suspended(x.recs[:p]) != nil {
					return p
				}
			}
		}
	}
	return -1
}

// crashAt is the index where the recorded process died inside the turn
// [i, end): its end when the recording stops inside it, else the crash
// point its interrupted turn/end shows (-1: it did not die).
func (x *rerun) crashAt(i, end int) int {
	if x.recs[end-1].Type() != session.TypeTurnEnd {
		return end
	}
	return x.crashPoint(i, end)
}

// runSegment runs the agent over the recorded records [i, stop) of the
// turn [i, end): it resumes a suspended step, continues a continuation
// or runs the turn, fenced at stop. A turn that was aborted is cancelled
// where the recording shows it noticed: after the stream of its failed
// step, or after the last call that started.
func (x *rerun) runSegment(ctx context.Context, i, stop, end int) error {
	first := x.recs[i]
	x.fence = int64(x.sess.Len() + stop - i)
	defer func() { x.fence = -1 }()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	x.abort = nil
	if after, cause, ok := aborted(x.recs, i, end); ok && stop == end {
		x.abort, x.abortAfter = func() { cancel(cause) }, after
	}
	var err error
	switch {
	case first.Type() != session.TypeTurnStart:
		_, err = x.agent.Resume(ctx, x.sess)
	case continues(first) > 0:
		x.cont = &[2]int{i, stop}
		defer func() { x.cont = nil }()
		_, err = x.agent.Continue(ctx, x.sess, agentloop.By(poster(first)))
	default:
		_, err = x.agent.Run(ctx, x.sess, prompt(x.recs, i), agentloop.By(poster(first)))
	}
	return err
}

// repair closes turn n, whose recorded process died at stop, the way
// crash repair closes a dead process's turn, and checks the closers are
// the recorded [stop, end).
func (x *rerun) repair(ctx context.Context, n, stop, end int) error {
	base := x.sess.Len()
	for _, ev := range session.CloseTail(x.sess.Records()) {
		if _, err := x.sess.Append(ctx, ev); err != nil {
			return fmt.Errorf("replay: repair turn %d: %w", n, err)
		}
	}
	return x.align(stop, end, base)
}

// align checks that the new log's records from base on are, type for
// type, the recorded records [from, to), and maps their seqs.
func (x *rerun) align(from, to, base int) error {
	got := x.sess.Records()[base:]
	for k := 0; k < max(to-from, len(got)); k++ {
		de := &DivergedError{Seq: -1}
		if k < to-from {
			r := x.recs[from+k]
			de.Seq, de.Turn, de.Step, de.Recorded = x.seqOf(r), r.Turn(), r.Step(), r.Type()
		}
		if k < len(got) {
			de.Replayed = got[k].Type()
			if de.Recorded == "" || de.Replayed == session.TypeStepStart {
				de.Turn, de.Step = got[k].Turn(), got[k].Step()
			}
		}
		if de.Recorded != de.Replayed {
			return de
		}
		x.seqs[from+k] = got[k].Seq()
	}
	return nil
}

// crashPoint returns where the recorded process died in the turn
// [start, end) that crash repair closed: the first index p whose
// closers, as repair makes them, are exactly the records [p, end); or -1
// when the turn was not closed by repair.
func (x *rerun) crashPoint(start, end int) int {
	if e, err := session.DecodeData[session.TurnEnd](x.recs[end-1]); err != nil || e.Reason != session.ReasonInterrupted {
		return -1
	}
	for p := start + 1; p < end; p++ {
		closers := session.CloseTail(x.recs[:p])
		if len(closers) != end-p {
			continue
		}
		same := true
		for k, ev := range closers {
			if !sameEvent(ev, x.recs[p+k]) {
				same = false
				break
			}
		}
		if same {
			return p
		}
	}
	return -1
}

// sameEvent reports whether ev, as repair makes it, is the record r.
func sameEvent(ev session.Event, r session.Record) bool {
	if ev.Type != r.Type() || ev.Turn != r.Turn() || ev.Step != r.Step() || !slices.Equal(ev.Sources, r.Sources()) {
		return false
	}
	a, err := json.Marshal(ev.Data)
	if err != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(r.Data(), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func continues(r session.Record) int {
	s, _ := session.DecodeData[session.TurnStart](r)
	return s.Continues
}

// poster is who the turn/start r says posted its turn, so that the
// rerun's turn/start says the same.
func poster(r session.Record) string {
	s, _ := session.DecodeData[session.TurnStart](r)
	return s.By
}

// prompt is the user message the turn starting at i was run with.
func prompt(recs []session.Record, i int) string {
	if i+1 < len(recs) && recs[i+1].Type() == session.TypeUserMessage && recs[i+1].Turn() == recs[i].Turn() {
		if m, err := session.DecodeData[session.UserMessage](recs[i+1]); err == nil {
			return m.Content
		}
	}
	return ""
}

// agentFor makes sure the agent for the recorded records [i, stop) is
// the one the recording shows: a new one where the original was a new
// loop instance (it logged a header of reason initial or resume there),
// configured from the header in force at the segment's first step.
func (x *rerun) agentFor(i, stop int) error {
	sg, err := x.segmentConfig(i, stop)
	if err != nil {
		return err
	}
	if x.reuses(sg) {
		return nil
	}
	cfg := sg.cfg
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = max(x.maxSteps(i), sg.least)
	}
	x.closeAgent()
	x.cfg, x.schema, x.inPlace = cfg, sg.hdr.OutputSchema, sg.inPlace
	opts := []agentloop.Option{agentloop.WithProvider(x.prov), agentloop.WithToolSource(x.tools), agentloop.WithName("replay")}
	if sg.inPlace {
		opts = append(opts, agentloop.WithDenialsInCallOrder())
	}
	x.agent = agentloop.New(x.c, cfg, opts...)
	return nil
}

// segment is the configuration the recorded records of a segment show
// their agent had.
type segment struct {
	cfg agentloop.Config // MaxSteps: exact (0: unknown)
	hdr *session.Header
	// instance: its first request/header is of a new loop instance.
	instance, inPlace bool
	exact, least      int // see stepLimits
}

func (x *rerun) segmentConfig(i, stop int) (segment, error) {
	hdr, instance, err := x.segmentHeader(i, stop)
	if err != nil {
		return segment{}, err
	}
	exact, least := x.stepLimits(i, stop)
	cfg := agentloop.Config{System: hdr.System, Model: hdr.Model, Temperature: hdr.Temperature,
		MaxTokens: x.uncapped(i, stop, hdr.MaxTokens), Stop: hdr.Stop, MaxSteps: exact, OutputSchema: schemaConfig(hdr.OutputSchema)}
	return segment{cfg: cfg, hdr: hdr, instance: instance, inPlace: denialsInCallOrder(x.recs[i:stop], x.delegations), exact: exact, least: least}, nil
}

// reuses reports whether the current agent runs the segment sg.
func (x *rerun) reuses(sg segment) bool {
	return x.agent != nil && !sg.instance && x.agentFits(sg.cfg, sg.hdr, sg.inPlace, sg.exact, sg.least)
}

// handedAt finds, in the recorded records [i, stop), where another loop
// instance took the turn over without a header: the segment's first
// request is the current instance's (no header of a new one), yet that
// instance cannot have run the whole segment (it ended at a step limit
// the instance does not have, or ran more steps than it allows). The process died with a step's calls
// decided (a session-scoped allow decides them as the loop asks), and
// another resumed the step and started none, so it logged no header. It
// returns where the first loop stopped: the last point after the
// segment's last step/start where the step was suspended with every call
// decided; or -1.
func (x *rerun) handedAt(i, stop int) int {
	if x.agent == nil {
		return -1
	}
	last, requested := -1, false
	for k := i; k < stop; k++ {
		switch x.recs[k].Type() {
		case session.TypeStepStart:
			last = k
		case session.TypeRequestDigest:
			requested = true
		}
	}
	if last < 0 || !requested {
		return -1 // a new agent logs no header here either
	}
	sg, err := x.segmentConfig(i, stop)
	if err != nil || sg.instance || x.reuses(sg) || !x.agentFits(sg.cfg, sg.hdr, sg.inPlace, 0, 0) {
		return -1 // the same instance runs it, or another config than its limit
	}
	for p := stop - 1; p > last; p-- {
		if s := session.Suspended(x.recs[:p]); s != nil && len(s.Undecided()) == 0 {
			return p
		}
	}
	return -1
}

// segmentHeader returns the header in force at the first step of the
// recorded records [i, stop) and whether their first request/header is
// of a new loop instance (reason initial or resume). Where no step
// starts (a resumed step that ends its turn) the config that matters is
// the step limit: the header is the current agent's, or the log's.
func (x *rerun) segmentHeader(i, stop int) (*session.Header, bool, error) {
	instance, sawHeader := false, false
	var hdr *session.Header
	for _, r := range x.recs[i:stop] {
		switch r.Type() {
		case session.TypeRequestHeader:
			if !sawHeader {
				h, err := session.DecodeData[session.RequestHeader](r)
				if err != nil {
					return nil, false, fmt.Errorf("replay: seq %d: %w", x.seqOf(r), err)
				}
				instance = h.Reason != session.HeaderChange
				sawHeader = true
			}
		case session.TypeStepStart:
			if s := x.byStep[[2]int{r.Turn(), r.Step()}]; s != nil && hdr == nil {
				h := s.Header
				hdr = &h
			}
		}
	}
	if hdr == nil {
		h, _ := session.DeriveHeader(x.recs[:stop])
		if x.agent != nil {
			h = session.Header{System: x.cfg.System, Model: x.cfg.Model, Temperature: x.cfg.Temperature, MaxTokens: x.cfg.MaxTokens, Stop: x.cfg.Stop}
		}
		hdr = &h
	}
	return hdr, instance, nil
}

// stepLimits is the step limit of the recorded records [i, stop): exact
// when their turn ended at it (0: it did not), and at least the last
// step they run — or, when a budget refused the step after a turn's
// last, that step: the loop must get that far to be refused there.
func (x *rerun) stepLimits(i, stop int) (exact, least int) {
	least = 1
	for k, r := range x.recs[i:stop] {
		least = max(least, r.Step())
		if r.Type() == session.TypeTurnEnd {
			if e, err := session.DecodeData[session.TurnEnd](r); err == nil && e.Reason == session.ReasonMaxSteps && i+k > 0 {
				exact = x.recs[i+k-1].Step()
			}
		}
	}
	first := x.recs[i].Turn()
	for _, st := range session.BudgetStops(x.recs[:stop]) {
		if st.Turn >= first {
			least = max(least, st.Step)
		}
	}
	return exact, least
}

// agentFits reports whether the current agent can run a segment that
// wants cfg, the output schema of hdr, denials in call order or not, and
// the step limits: otherwise the recording shows another configuration,
// and a new agent runs it.
func (x *rerun) agentFits(cfg agentloop.Config, hdr *session.Header, inPlace bool, exact, least int) bool {
	return inPlace == x.inPlace && cfg.System == x.cfg.System && cfg.Model == x.cfg.Model && capsTo(x.cfg.MaxTokens, cfg.MaxTokens) &&
		slices.Equal(cfg.Stop, x.cfg.Stop) && equalTemp(cfg.Temperature, x.cfg.Temperature) &&
		session.HeaderEquals(session.Header{OutputSchema: hdr.OutputSchema}, session.Header{OutputSchema: x.schema}) &&
		(exact <= 0 || x.cfg.MaxSteps == exact) && x.cfg.MaxSteps >= least
}

// uncapped is the max_tokens of the agent that ran the records [i, stop):
// a budget may have capped some steps' headers below it (agent/step's
// Cap), never raised one, so it is the largest of the segment's step
// headers, or unbounded (0) when one of them is. The rerun caps each step
// to its recorded header again (see Run).
func (x *rerun) uncapped(i, stop, first int) int {
	most := first
	for _, r := range x.recs[i:stop] {
		if r.Type() != session.TypeStepStart {
			continue
		}
		s := x.byStep[[2]int{r.Turn(), r.Step()}]
		if s == nil {
			continue
		}
		if s.Header.MaxTokens == 0 || most == 0 {
			return 0
		}
		most = max(most, s.Header.MaxTokens)
	}
	return most
}

// capsTo reports whether an agent of max_tokens have runs a step whose
// header has want: the same, or lower through a cap (0 is unbounded).
func capsTo(have, want int) bool {
	return have == want || want > 0 && (have == 0 || want < have)
}

func equalTemp(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// maxSteps is the step limit of a loop instance that starts at i: the
// steps of the first turn of it that ended at the limit, else one more
// than the most steps of any recorded turn. The instance ends at the next header of
// another instance, or where a turn ended at a limit lower than a step
// already run (an instance that ran no step logged no header).
func (x *rerun) maxSteps(i int) int {
	// One more than any turn ran: a turn that did not end at the limit
	// must not end at it in the rerun either (and where the recording
	// ran out, the rerun asks for the step it does not have).
	most := 1
	for _, r := range x.recs {
		most = max(most, r.Step()+1)
	}
	// A turn a limit ended before step n started ran under an instance
	// whose step limit is n or more: the limit is asked before the step.
	refused := map[int]int{}
	for _, st := range session.BudgetStops(x.recs) {
		most = max(most, st.Step+1)
		refused[st.Turn] = st.Step
	}
	steps, least := 0, 1
	for k := i; k < len(x.recs); k++ {
		r := x.recs[k]
		least = max(least, r.Step())
		switch r.Type() {
		case session.TypeStepStart:
			steps++
		case session.TypeRequestHeader:
			if h, err := session.DecodeData[session.RequestHeader](r); err == nil && h.Reason != session.HeaderChange && steps > 1 {
				return most
			}
		case session.TypeTurnEnd:
			least = max(least, refused[r.Turn()])
			if e, err := session.DecodeData[session.TurnEnd](r); err == nil && e.Reason == session.ReasonMaxSteps && k > 0 {
				if n := x.recs[k-1].Step(); n >= least {
					return n
				}
				return max(most, least)
			}
		}
	}
	return most
}

// nextHeader is the recorded header in force at the step the loop is
// about to run in the new log, or the header logged last.
func (x *rerun) nextHeader() session.Header {
	turn, step := 1, 1
	for r := range x.sess.Backward() {
		switch r.Type() {
		case session.TypeTurnEnd:
			turn, step = r.Turn()+1, 1
		case session.TypeTurnStart:
			turn, step = r.Turn(), 1
		case session.TypeStepStart:
			turn, step = r.Turn(), r.Step()+1
		default:
			continue
		}
		break
	}
	if s := x.byStep[[2]int{turn, step}]; s != nil {
		return s.Header
	}
	h, _ := x.sess.Header()
	return h
}

// tools is the agent's tool source: the tools of the next step's
// recorded header, each answering with its recorded results (at a
// continuation's start, as retryTools adjusts them).
func (x *rerun) tools() ([]agentloop.Tool, error) {
	h := x.nextHeader()
	specs := h.Tools
	if x.cont != nil && x.betweenTurns() {
		specs = x.retryTools(h, x.cont[0], x.cont[1])
	}
	out := make([]agentloop.Tool, len(specs))
	for k, spec := range specs {
		out[k] = &recordedTool{spec: spec, safe: x.safe[spec.Name], deferred: x.delegations[spec.Name]}
	}
	return out, nil
}

// betweenTurns reports whether the new log has no open turn: the loop
// asks for tools there when it starts a turn.
func (x *rerun) betweenTurns() bool {
	for r := range x.sess.Backward() {
		if r.Turn() > 0 {
			return r.Type() == session.TypeTurnEnd
		}
	}
	return true
}

// stepProvider serves each step the recorded stream of the same turn and
// step, and names itself as the header in force at the next step does.
type stepProvider struct {
	x *rerun
	p *Provider
}

func (s *stepProvider) Name() string { return s.x.nextHeader().Provider }

func (s *stepProvider) Stream(ctx context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !req.LoopBuilt() {
		return nil, s.p.fail(ErrOneShot)
	}
	st := s.x.byStep[[2]int{req.Turn, req.Step}]
	if st == nil {
		return nil, s.p.fail(fmt.Errorf("%w: the recording has no turn %d step %d", ErrExhausted, req.Turn, req.Step))
	}
	if abort := s.x.abort; abort != nil && st.Err != "" {
		return abortedStream(ctx, s.p, *st, abort) // the recorded stream ended when the turn was cancelled
	}
	return s.p.serve(ctx, *st)
}

type stepDigest struct {
	turn, step int
	sha        string
	at, start  int // the indexes of the request/digest and its step/start
}

func stepDigests(records []session.Record) []stepDigest {
	var out []stepDigest
	start := 0
	for i, r := range records {
		switch r.Type() {
		case session.TypeStepStart:
			start = i
		case session.TypeRequestDigest:
			d, _ := session.DecodeData[session.Digest](r)
			out = append(out, stepDigest{r.Turn(), r.Step(), d.SHA256, i, start})
		}
	}
	return out
}

// heldDigest is the digest of a recorded step's request with its text as
// a record holds it now (see session.ValidText): what the rerun of a log
// written before records held valid UTF-8 only sends, since its records
// are made now. It is the recorded digest for any other log, and "" when
// the log's records do not re-derive the recorded digest.
func heldDigest(records []session.Record, d stepDigest) string {
	msgs, h, _, err := session.DeriveRequest(records[:d.at], d.start)
	if err != nil || session.RequestDigest(h, msgs) != d.sha {
		return ""
	}
	return session.RequestDigest(session.ValidText(h), session.ValidText(msgs))
}

// compareDigests pairs the steps of two logs in order.
func compareDigests(orig, again []session.Record) []StepComparison {
	a, b := stepDigests(orig), stepDigests(again)
	out := []StepComparison{}
	for i := range max(len(a), len(b)) {
		var st StepComparison
		if i < len(a) {
			st.Turn, st.Step, st.Recorded = a[i].turn, a[i].step, a[i].sha
		}
		if i < len(b) {
			if i >= len(a) {
				st.Turn, st.Step = b[i].turn, b[i].step
			}
			st.Replayed = b[i].sha
		}
		st.Same = st.Recorded != "" && (st.Recorded == st.Replayed || st.Replayed != "" && st.Replayed == heldDigest(orig, a[i]))
		out = append(out, st)
	}
	return out
}

// results are a recording's tool results by call id (unique in a
// session, and the rerun's calls have the recorded ids). Only the
// results of calls that started came from tool/execute: the loop answers
// the others itself (a denied call, bad arguments), again. A call a
// continuation ran again (a retry, agentloop.ToolInvocation.Retry) is
// answered with the outcome that continuation logged as the call's
// tool/reconcile.
type results struct {
	byCall map[string]session.ToolResult
	// retried are the outcomes the recording's continuations learned by
	// running a call again, by the continuation's turn and the call's id.
	retried map[retryOf]session.ToolReconcile
}

type retryOf struct {
	turn int
	call string
}

func recordedResults(records []session.Record) results {
	b := results{byCall: map[string]session.ToolResult{}, retried: map[retryOf]session.ToolReconcile{}}
	started := map[string]bool{}
	for _, r := range records {
		switch r.Type() {
		case session.TypeToolStart:
			if s, err := session.DecodeData[session.ToolStart](r); err == nil {
				started[s.ID] = true
			}
		case session.TypeToolResult:
			if res, err := session.DecodeData[session.ToolResult](r); err == nil && started[res.ID] {
				b.byCall[res.ID] = res
			}
		case session.TypeToolReconcile:
			// The loop's own (By empty), in the continuation that ran
			// the call again; a person's is copied, never answered.
			if rc, err := session.DecodeData[session.ToolReconcile](r); err == nil && rc.By == "" && r.Turn() > 0 {
				b.retried[retryOf{r.Turn(), rc.ID}] = rc
			}
		}
	}
	return b
}

// execute answers a call of the rerun with its recorded result.
func (b results) execute(inv *agentloop.ToolInvocation) agentloop.ToolOutput {
	if inv.Retry {
		rc, ok := b.retried[retryOf{inv.Turn, inv.Call.ID}]
		if !ok {
			// The recorded retry learned nothing: its process died, or
			// the outcome was still unknown.
			return agentloop.ToolOutput{Error: &session.ToolResultError{Code: session.CodeToolOutcomeUnknown, Message: "the recording has no outcome of this retry"}}
		}
		return agentloop.ToolOutput{Content: rc.Content, Error: rc.Error}
	}
	res, ok := b.byCall[inv.Call.ID]
	if !ok {
		return agentloop.ToolOutput{Error: &session.ToolResultError{Code: "REPLAY_NO_RESULT", Message: "the recording has no result of this call"}}
	}
	return agentloop.ToolOutput{Content: res.Content, Error: res.Error, Child: res.Child}
}

// delegations returns the names of the tools whose recorded results name
// a child session: sub-agents.
func delegations(records []session.Record) map[string]bool {
	out := map[string]bool{}
	for _, r := range records {
		if r.Type() != session.TypeToolResult {
			continue
		}
		if res, err := session.DecodeData[session.ToolResult](r); err == nil && res.Child != nil {
			out[res.Name] = true
		}
	}
	return out
}

// concurrencySafe returns the names of the tools a recording shows ran
// concurrently: the loop logs the calls of a batch of concurrency-safe
// tools one after the other, before any starts, and so must the rerun.
func concurrencySafe(records []session.Record) map[string]bool {
	safe := map[string]bool{}
	for k := 1; k < len(records); k++ {
		if records[k].Type() != session.TypeToolCall || records[k-1].Type() != session.TypeToolCall {
			continue
		}
		for _, r := range records[k-1 : k+1] {
			if c, err := session.DecodeData[session.ToolCall](r); err == nil {
				safe[c.Name] = true
			}
		}
	}
	return safe
}

// recordedTool is a tool of a recorded header. Its calls are answered
// on tool/execute, from the recording, before they reach it.
type recordedTool struct {
	spec session.ToolSpec
	safe bool
	// deferred: the recording shows a sub-agent's calls, whose tool/start
	// the loop logs once the call returned.
	deferred bool
}

// DeferredStart implements agentloop.DeferredStarter as the recording
// shows the tool.
func (t *recordedTool) DeferredStart() bool { return t.deferred }

func (t *recordedTool) Spec() session.ToolSpec { return t.spec }

// ConcurrencySafe implements agentloop.ConcurrencySafe as the recording
// shows the tool.
func (t *recordedTool) ConcurrencySafe() bool { return t.safe }

func (t *recordedTool) Execute(context.Context, json.RawMessage) (string, error) {
	return "", &agentloop.ToolError{Code: "REPLAY_NO_RESULT", Message: "the recording has no result of this call"}
}

var _ agentloop.Tool = (*recordedTool)(nil)

// approvals is what a recording says of its tool calls' approvals.
type approvals struct {
	requests map[string]session.ApprovalRequest
	policy   map[string]*approval.Matcher // in force at each call
}

func recordedApprovals(records []session.Record) *approvals {
	a := &approvals{requests: map[string]session.ApprovalRequest{}, policy: map[string]*approval.Matcher{}}
	var pm *approval.Matcher
	for _, r := range records {
		switch r.Type() {
		case session.TypeApprovalPolicy:
			if p, err := session.DecodeData[session.ApprovalPolicy](r); err == nil {
				pm, _ = approval.Compile(p) // a loaded log's policies compile
			}
		case session.TypeToolCall:
			if c, err := session.DecodeData[session.ToolCall](r); err == nil {
				a.policy[c.ID] = pm
			}
		case session.TypeApprovalRequest:
			if q, err := session.DecodeData[session.ApprovalRequest](r); err == nil {
				a.requests[q.ID] = q
			}
		}
	}
	return a
}

// verdict answers call as the recording did.
func (a *approvals) verdict(call session.ToolCall) agentloop.Verdict {
	if q, ok := a.requests[call.ID]; ok {
		return agentloop.Verdict{Action: session.ActionAsk, By: q.By, Reason: q.Reason}
	}
	if pm := a.policy[call.ID]; pm != nil {
		if action, reason := pm.Match(call.Name, call.Arguments); action == session.ActionDeny {
			return agentloop.Verdict{Action: action, By: pm.Policy().By, Reason: reason}
		}
	}
	return agentloop.Verdict{Action: session.ActionAllow}
}
