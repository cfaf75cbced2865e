package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// SummaryPrefix starts the user message a compaction replaces a range
// with (compaction.SummaryPrefix; this package may not import a sibling
// plugin): a recorded one-shot's reply is that message without it.
const SummaryPrefix = "Summary of the earlier conversation:\n\n"

// Divergence is the first request of a rerun against another composition
// that differs from the recorded one.
type Divergence struct {
	Turn int `json:"turn"`
	Step int `json:"step"`
	// OneShot is the purpose of a one-shot request that differs ("" for a
	// step's request); Turn is then the turn it came before, Step 0.
	OneShot string `json:"oneshot,omitempty"`
	// Field names what differs: "header.system", "header.tools", … or
	// "messages[N]" (the first message that differs, or is missing or
	// extra), "request" for a step or one-shot the recording does not
	// have, "purpose" for a one-shot made for another purpose.
	Field string `json:"field"`
	// Expected is the recorded value, Actual the value built now, both
	// rendered for reading (JSON, one item a line).
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
	// NotSent says why the rerun sent no request for a recorded step (its
	// turn ended before it, or was refused): Field is then "request".
	NotSent string `json:"not_sent,omitempty"`
}

func (d *Divergence) Error() string {
	what := fmt.Sprintf("turn %d step %d", d.Turn, d.Step)
	if d.OneShot != "" {
		what = fmt.Sprintf("the %s one-shot before turn %d", d.OneShot, d.Turn)
	}
	if d.NotSent != "" {
		return fmt.Sprintf("replay: %s: no request was sent: %s", what, d.NotSent)
	}
	return fmt.Sprintf("replay: %s: %s differs", what, d.Field)
}

// Is makes a Divergence match ErrDiverged.
func (d *Divergence) Is(target error) bool { return target == ErrDiverged }

// Diff renders the divergence as lines of a diff: "- " the recorded
// value, "+ " the value built now.
func (d *Divergence) Diff() string {
	a, b := strings.Split(d.Expected, "\n"), strings.Split(d.Actual, "\n")
	var out strings.Builder
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	j := 0
	for j < len(a)-i && j < len(b)-i && a[len(a)-1-j] == b[len(b)-1-j] {
		j++
	}
	for _, l := range a[max(0, i-2):i] {
		out.WriteString("  " + l + "\n")
	}
	for _, l := range a[i : len(a)-j] {
		out.WriteString("- " + l + "\n")
	}
	for _, l := range b[i : len(b)-j] {
		out.WriteString("+ " + l + "\n")
	}
	for _, l := range a[len(a)-j : min(len(a), len(a)-j+2)] {
		out.WriteString("  " + l + "\n")
	}
	return out.String()
}

// AgainstOptions configures [Against].
type AgainstOptions struct {
	// Live sends the requests from the divergence on to the composition's
	// provider (the next llm/stream handler) and lets its tools run,
	// instead of stopping there.
	Live bool
	// Session is the session to run the turns on; nil: a new session of
	// the manager given to Against.
	Session *live.Session
	// From is the index of the first recorded record to re-run (a
	// turn/start): the records before it are the prefix Session already
	// holds (a fork of the recording).
	From int
}

// AgainstResult is the result of [Against].
type AgainstResult struct {
	Session *live.Session
	// Steps counts the step requests sent, Identical those equal to the
	// recorded ones.
	Steps, Identical int
	// Divergence is the first request that differs (nil: none did).
	Divergence *Divergence
	// DivergedTurn is the recorded index of the turn/start of the turn
	// the divergence happened in (-1: none).
	DivergedTurn int
	// Errors are the errors the turns ended with.
	Errors []error
}

// Against re-runs the recorded user turns through agent (the loop of
// another composition: its system prompt, tools, compaction and plugins)
// on a session of mgr, feeding the recorded model responses while the
// requests still equal the recorded ones, and reports the first request
// that differs. While they match, the model, the one-shot requests (a
// compaction's summary), the tool calls and the approvals are answered
// from the recording; from the divergence on the turn stops, or, with
// Live, the composition's own provider and tools answer.
//
// It listens on llm/stream (prepended) for the session only and answers
// the requests it serves itself, so no request/digest is logged for
// them.
func Against(ctx context.Context, c *bus.Context, mgr *live.Manager, agent *agentloop.Agent, recorded []session.Record, opts AgainstOptions) (*AgainstResult, error) {
	recorded, orig, err := readable(recorded)
	if err != nil {
		return nil, err
	}
	rec, err := FromRecords(recorded)
	if err != nil {
		return nil, err
	}
	sess := opts.Session
	if sess == nil {
		if sess, err = mgr.Create(ctx); err != nil {
			return nil, err
		}
	}
	x := newAgainst(rec, recorded, orig, opts.Live, sess)
	defer x.listen(c, sess)()
	for i := indexIn(orig, opts.From); i < len(recorded); i++ {
		if recorded[i].Type() != session.TypeTurnStart {
			continue
		}
		stop, err := x.rerunTurn(ctx, agent, sess, i)
		if err != nil {
			return nil, err
		}
		if stop {
			break
		}
	}
	return x.out, nil
}

// newAgainst indexes the recording for a rerun on sess: the step/starts
// by step, the one-shots by the turn they came before, the decisions
// given by someone (not a session rule), and the steps' shape.
func newAgainst(rec *Recording, recorded []session.Record, orig []int64, liveAfter bool, sess *live.Session) *against {
	x := &against{rec: rec, recs: recorded, orig: orig, live: liveAfter, box: recordedResults(recorded), ap: recordedApprovals(recorded),
		byStep: map[[2]int]int{}, shotsBefore: map[int][]int{}, usedShots: map[int]int{}, sent: map[[2]int]bool{},
		fence: fence{rel: -1, at: -1}, out: &AgainstResult{Session: sess, DivergedTurn: -1}}
	for i, r := range recorded {
		switch r.Type() {
		case session.TypeStepStart:
			x.byStep[[2]int{r.Turn(), r.Step()}] = i
		case session.TypeRequestOneshot:
			next := nextTurn(recorded, i)
			x.shotsBefore[next] = append(x.shotsBefore[next], i)
		case session.TypeApprovalDecision:
			if d, err := session.DecodeData[session.ApprovalDecision](r); err == nil && d.By != session.SessionRuleBy {
				x.decisions = append(x.decisions, d)
			}
		}
	}
	for i := range rec.Steps {
		x.steps = append(x.steps, &rec.Steps[i])
	}
	x.shape = &rerun{recs: recorded, byStep: map[[2]int]*Step{}}
	for _, st := range x.steps {
		x.shape.byStep[[2]int{st.Turn, st.Step}] = st
	}
	return x
}

// nextTurn is the number of the first turn/start at or after index i of
// recs (0: none).
func nextTurn(recs []session.Record, i int) int {
	for _, r := range recs[i:] {
		if r.Type() == session.TypeTurnStart {
			return r.Turn()
		}
	}
	return 0
}

// listen puts x in front of sess's model stream, tool calls and
// approvals, and fences its commits; the function it returns takes all
// four handlers off again.
func (x *against) listen(c *bus.Context, sess *live.Session) func() {
	offStream := agentloop.LLMStream.On(c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
		if req.Session != sess.ID() {
			return next(ctx, req)
		}
		return x.stream(ctx, req, next)
	}, bus.Prepend)
	offExecute := agentloop.ToolExecute.On(c, func(ctx context.Context, inv *agentloop.ToolInvocation, next bus.Next[*agentloop.ToolInvocation, agentloop.ToolOutput]) (agentloop.ToolOutput, error) {
		if inv.Session != sess.ID() || x.diverged() {
			return next(ctx, inv)
		}
		out := x.box.execute(inv)
		if abort, after := x.abortState(); abort != nil && inv.Call.ID == after {
			abort() // the recorded turn was cancelled while this call ran
		}
		return out, nil
	}, bus.Prepend)
	offApprove := agentloop.ToolApprove.On(c, func(_ context.Context, q *agentloop.ApprovalQuery) (agentloop.Verdict, error) {
		if q.Session != sess || x.diverged() {
			return agentloop.Verdict{}, nil
		}
		return x.ap.verdict(q.Call), nil
	}, bus.Prepend)
	offVeto := bus.Veto.On(c, func(_ context.Context, d bus.Dispatch) error {
		cm, ok := d.Payload.(live.Commit)
		if !ok || cm.Session() != sess || x.live && x.diverged() {
			return nil
		}
		return x.fence.check(cm.Record())
	})
	return func() {
		offVeto()
		offApprove()
		offExecute()
		offStream()
	}
}

// rerunTurn re-runs the recorded turn whose turn/start is at index i on
// sess and reports whether the rerun stops after it (left suspended, or
// diverged without Live). The error is one repairing a crashed turn.
func (x *against) rerunTurn(ctx context.Context, agent *agentloop.Agent, sess *live.Session, i int) (stop bool, err error) {
	r := x.recs[i]
	x.turn = i
	end := turnEnd(x.recs, i)
	crash := x.shape.crashAt(i, end)
	if crash >= 0 && !x.diverged() {
		x.shape.failedBeforeCrash(i, crash)
		x.fence.arm(int64(crash - i))
	}
	tctx, cancel := context.WithCancelCause(ctx)
	x.setAbort(nil, "")
	if after, cause, ok := aborted(x.recs, i, end); ok && crash < 0 {
		x.setAbort(func() { cancel(cause) }, after)
	}
	terr := x.runTurn(ctx, tctx, agent, sess, i)
	cancel(nil)
	if x.fence.disarm() && errors.Is(terr, errCrashed) {
		// Closed the way crash repair closed the dead process's turn.
		terr = nil
		if err := closeTail(ctx, sess, r.Turn()); err != nil {
			return true, err
		}
	}
	x.noteEnd(sess, r.Turn(), terr)
	return errors.Is(terr, agentloop.ErrSuspended) || x.diverged() && !x.live, nil
}

// turnEnd is the index just past the recorded turn whose turn/start is at
// index i: its turn/end, or where its records stop.
func turnEnd(recs []session.Record, i int) int {
	end := i + 1
	for end < len(recs) && recs[end].Turn() == recs[i].Turn() && recs[end-1].Type() != session.TypeTurnEnd {
		end++
	}
	return end
}

// runTurn runs (or continues) recorded turn i on sess under tctx and
// resumes it as long as the recording has the decisions it waits for.
func (x *against) runTurn(ctx, tctx context.Context, agent *agentloop.Agent, sess *live.Session, i int) error {
	var err error
	if continues(x.recs[i]) > 0 {
		_, err = agent.Continue(tctx, sess)
	} else {
		_, err = agent.Run(tctx, sess, prompt(x.recs, i))
	}
	for errors.Is(err, agentloop.ErrSuspended) && x.decide(ctx, sess) {
		_, err = agent.Resume(tctx, sess)
	}
	return err
}

// closeTail closes turn on sess the way crash repair closes a dead
// process's turn.
func closeTail(ctx context.Context, sess *live.Session, turn int) error {
	for _, ev := range session.CloseTail(sess.Records()) {
		if _, err := sess.Append(ctx, ev); err != nil {
			return fmt.Errorf("replay: repair turn %d: %w", turn, err)
		}
	}
	return nil
}

// noteEnd records how turn ended: the error it ended with (not a
// divergence or a recorded cancellation), and as a divergence a recorded
// request the rerun never sent: a composition that refuses every turn
// compares nothing.
func (x *against) noteEnd(sess *live.Session, turn int, err error) {
	if err != nil && !errors.Is(err, ErrDiverged) && !x.aborting() {
		x.out.Errors = append(x.out.Errors, err)
	}
	if d := x.unsent(sess, turn, err); d != nil {
		x.diverge(d)
	}
}

// fence stops the loop where a recorded process died: rel is the crash
// point counted from the turn's turn/start (-1: no fence), at the seq it
// falls on in the rerun once that turn/start is committed (-1: not yet).
type fence struct{ rel, at int64 }

func (f *fence) arm(rel int64) { f.rel, f.at = rel, -1 }

// disarm lifts the fence and reports whether one was up.
func (f *fence) disarm() bool {
	up := f.rel >= 0
	f.rel, f.at = -1, -1
	return up
}

// check vetoes a commit of r at or past the fence.
func (f *fence) check(r session.Record) error {
	if f.rel < 0 {
		return nil
	}
	if r.Type() == session.TypeTurnStart && f.at < 0 {
		f.at = r.Seq() + f.rel
	}
	if f.at >= 0 && r.Seq() >= f.at {
		return errCrashed
	}
	return nil
}

type against struct {
	rec *Recording
	// recs is the recording without its ignorable records (readable);
	// orig maps its indexes to the recorded seqs.
	recs   []session.Record
	orig   []int64
	live   bool
	box    results
	ap     *approvals
	byStep map[[2]int]int // recorded index of each step's step/start
	steps  []*Step
	// shotsBefore lists the recorded request/oneshot indexes by the turn
	// they came before; usedShots counts those served.
	shotsBefore map[int][]int
	usedShots   map[int]int
	decisions   []session.ApprovalDecision
	turn        int // recorded index of the turn/start being re-run
	// shape is the recording's steps by turn and step, for its crash
	// points; fence stops the rerun at the one of the turn re-run.
	shape *rerun
	fence fence

	mu  sync.Mutex
	out *AgainstResult
	// sent are the steps whose request the rerun sent, by turn and step.
	sent map[[2]int]bool
	// abort cancels the turn being re-run where the recorded one was
	// cancelled: after the call abortAfter, or its failed stream.
	abort      func()
	abortAfter string
}

func (x *against) setAbort(abort func(), after string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.abort, x.abortAfter = abort, after
}

func (x *against) abortState() (func(), string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.out.Divergence != nil {
		return nil, "" // from a divergence on, nothing follows the recording
	}
	return x.abort, x.abortAfter
}

func (x *against) aborting() bool {
	a, _ := x.abortState()
	return a != nil
}

func (x *against) diverged() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.out.Divergence != nil
}

func (x *against) diverge(d *Divergence) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.out.Divergence == nil {
		x.out.Divergence, x.out.DivergedTurn = d, int(seqIn(x.orig, int64(x.turn)))
	}
}

func (x *against) stream(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
	if req.LoopBuilt() {
		x.mu.Lock()
		x.out.Steps++
		x.sent[[2]int{req.Turn, req.Step}] = true
		x.mu.Unlock()
	}
	if !x.diverged() {
		var d *Divergence
		var serve func() (agentloop.Stream, error)
		if req.LoopBuilt() {
			d, serve = x.step(ctx, req)
		} else {
			d, serve = x.oneshot(req)
		}
		if d == nil {
			if req.LoopBuilt() {
				x.mu.Lock()
				x.out.Identical++
				x.mu.Unlock()
			}
			return serve()
		}
		x.diverge(d)
	}
	if x.live {
		return next(ctx, req)
	}
	return nil, x.out.Divergence
}

// unsent returns the divergence of the first recorded step of turn that
// sent a request (it has a request/digest) for which the rerun on sess
// sent none, with why: the error the turn ended with, else its turn/end.
// Nil when the rerun sent them all, or diverged already.
func (x *against) unsent(sess *live.Session, turn int, err error) *Divergence {
	if x.diverged() {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, st := range x.steps {
		if st.Turn != turn || st.Digest == "" || x.sent[[2]int{turn, st.Step}] {
			continue
		}
		why := "the turn ended before it"
		switch {
		case err != nil:
			why = err.Error()
		default:
			for r := range sess.Backward() {
				if r.Type() != session.TypeTurnEnd {
					continue
				}
				if e, derr := session.DecodeData[session.TurnEnd](r); derr == nil && r.Turn() == turn {
					why = "the turn ended " + e.Reason
					if e.Error != "" {
						why += ": " + e.Error
					}
				}
				break
			}
		}
		return &Divergence{Turn: turn, Step: st.Step, Field: "request", NotSent: why,
			Expected: fmt.Sprintf("the recorded request (sha256 %s)", st.Digest), Actual: "(no request: " + why + ")"}
	}
	return nil
}

// step compares a step's request with the recorded one.
func (x *against) step(ctx context.Context, req *agentloop.Request) (*Divergence, func() (agentloop.Stream, error)) {
	at, ok := x.byStep[[2]int{req.Turn, req.Step}]
	var st *Step
	for _, s := range x.steps {
		if s.Turn == req.Turn && s.Step == req.Step {
			st = s
		}
	}
	if !ok || st == nil {
		return &Divergence{Turn: req.Turn, Step: req.Step, Field: "request", Expected: "(the recording has no such step)",
			Actual: fmt.Sprintf("a request of %d messages", req.Messages.Len())}, nil
	}
	msgs, _, _, err := session.DeriveRequest(x.recs, at)
	if err != nil {
		return &Divergence{Turn: req.Turn, Step: req.Step, Field: "request", Expected: err.Error()}, nil
	}
	if d := diffRequest(st.Header, msgs, req.Header, req.Messages); d != nil {
		d.Turn, d.Step = req.Turn, req.Step
		return d, nil
	}
	p := New(x.rec)
	if abort, _ := x.abortState(); abort != nil && st.Err != "" {
		return nil, func() (agentloop.Stream, error) { return abortedStream(ctx, p, *st, abort) }
	}
	return nil, func() (agentloop.Stream, error) { return p.serve(ctx, *st) }
}

// oneshot compares a one-shot with the one the recording made at the
// same point (before the same turn, in order): both requests are
// re-derived from their logs (session.OneshotRequest) and compared field
// by field, as a step's are; a recorded one-shot of an older build, whose
// request the log does not hold, is compared by digest. A one-shot that
// matches is answered with the recorded reply; one that differs, or that
// the recording did not make, is the divergence (with Live it goes on to
// the composition's provider).
func (x *against) oneshot(req *agentloop.Request) (*Divergence, func() (agentloop.Stream, error)) {
	turn := x.recs[x.turn].Turn()
	x.mu.Lock()
	k := x.usedShots[turn]
	x.usedShots[turn]++
	x.mu.Unlock()
	shots := x.shotsBefore[turn]
	if k >= len(shots) {
		return &Divergence{Turn: turn, OneShot: req.Purpose(), Field: "request", Expected: "(the recording made no such request here)",
			Actual: fmt.Sprintf("a request of %d messages", req.Messages.Len())}, nil
	}
	if d := x.diffOneshot(x.recs[shots[k]], req); d != nil {
		d.Turn, d.OneShot = turn, req.Purpose()
		return d, nil
	}
	reply := x.oneshotReply(shots[k])
	return nil, func() (agentloop.Stream, error) {
		return func(yield func(agentloop.Chunk, error) bool) { yield(agentloop.Chunk{Text: reply}, nil) }, nil
	}
}

// diffOneshot names what differs between the recorded request/oneshot r
// and the one-shot req built now, or returns nil.
func (x *against) diffOneshot(r session.Record, req *agentloop.Request) *Divergence {
	o, err := session.DecodeData[session.Oneshot](r)
	if err != nil {
		return &Divergence{Field: "request", Expected: err.Error()}
	}
	if o.Purpose != req.Purpose() {
		return &Divergence{Field: "purpose", Expected: o.Purpose, Actual: req.Purpose()}
	}
	h, msgs, derived, err := session.OneshotRequest(x.recs, r)
	switch {
	case err != nil:
		return &Divergence{Field: "request", Expected: err.Error()}
	case derived:
		return diffRequest(h, msgs, req.Header, req.Messages)
	case o.SHA256 != req.Digest():
		return &Divergence{Field: "request", Expected: "a request of digest " + o.SHA256 + " (an older log: its request is not in it)",
			Actual: "a request of digest " + req.Digest()}
	}
	return nil
}

// oneshotReply is what the recording shows a one-shot answered: the
// content of the replace that follows it, without the summary prefix.
func (x *against) oneshotReply(at int) string {
	for _, r := range x.recs[at+1:] {
		if r.Turn() != 0 {
			break
		}
		if r.Surface().Op == session.OpReplace {
			if m, err := session.DecodeData[session.UserMessage](r); err == nil {
				return strings.TrimPrefix(m.Content, SummaryPrefix)
			}
		}
	}
	return ""
}

// decide gives sess's undecided calls their recorded decisions. It
// reports whether every one had one: the step can resume.
func (x *against) decide(ctx context.Context, sess *live.Session) bool {
	for {
		s := session.Suspended(sess.Records())
		if s == nil {
			return false
		}
		und := s.Undecided()
		if len(und) == 0 {
			return true
		}
		id := und[0].Call.ID
		i := slices.IndexFunc(x.decisions, func(d session.ApprovalDecision) bool { return d.ID == id })
		if i < 0 || x.diverged() {
			return false
		}
		d := x.decisions[i]
		if _, err := agentloop.Decide(ctx, sess, id, agentloop.Decision{Allow: d.Allow, By: d.By, Reason: d.Reason, Scope: d.Scope}); err != nil {
			return false
		}
	}
}

// diffRequest names the first part of the request built now (gh, gm)
// that differs from the recorded one (wh, wm), or returns nil.
func diffRequest(wh session.Header, wm []session.Message, gh session.Header, gm session.Messages) *Divergence {
	field := func(name string, want, got any) *Divergence {
		return &Divergence{Field: "header." + name, Expected: render(want), Actual: render(got)}
	}
	temp := func(t *float64) string {
		if t == nil {
			return "(unset)"
		}
		return strconv.FormatFloat(*t, 'g', -1, 64)
	}
	switch {
	case wh.Provider != gh.Provider:
		return field("provider", wh.Provider, gh.Provider)
	case wh.Model != gh.Model:
		return field("model", wh.Model, gh.Model)
	case wh.System != gh.System:
		return &Divergence{Field: "header.system", Expected: wh.System, Actual: gh.System}
	case !session.HeaderEquals(session.Header{Tools: wh.Tools}, session.Header{Tools: gh.Tools}):
		return &Divergence{Field: "header.tools", Expected: renderTools(wh.Tools), Actual: renderTools(gh.Tools)}
	case temp(wh.Temperature) != temp(gh.Temperature):
		return field("temperature", temp(wh.Temperature), temp(gh.Temperature))
	case wh.MaxTokens != gh.MaxTokens:
		return field("max_tokens", wh.MaxTokens, gh.MaxTokens)
	case !slices.Equal(wh.Stop, gh.Stop) && len(wh.Stop)+len(gh.Stop) > 0:
		return field("stop", wh.Stop, gh.Stop)
	}
	for i := range max(len(wm), gm.Len()) {
		if i < len(wm) && gm.EqualAt(i, &wm[i]) {
			continue
		}
		want, got := "(no message)", "(no message)"
		if i < len(wm) {
			want = render(wm[i])
		}
		if i < gm.Len() {
			got = render(gm.At(i))
		}
		return &Divergence{Field: fmt.Sprintf("messages[%d]", i), Expected: want, Actual: got}
	}
	return nil
}

func render(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// renderTools renders tools one a line, so that a diff shows the tool
// that was added, removed or changed.
func renderTools(ts []session.ToolSpec) string {
	lines := make([]string, 0, len(ts))
	for _, t := range ts {
		var params bytes.Buffer
		if len(t.Parameters) > 0 && json.Compact(&params, t.Parameters) != nil {
			params.Reset()
			params.Write(t.Parameters)
		}
		lines = append(lines, fmt.Sprintf("%s: %s %s", t.Name, t.Description, params.String()))
	}
	if len(lines) == 0 {
		return "(no tools)"
	}
	return strings.Join(lines, "\n")
}
