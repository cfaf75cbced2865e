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
	x := &against{rec: rec, recs: recorded, orig: orig, live: opts.Live, box: recordedResults(recorded), ap: recordedApprovals(recorded),
		byStep: map[[2]int]int{}, shotsBefore: map[int][]int{}, usedShots: map[int]int{}, sent: map[[2]int]bool{}, out: &AgainstResult{Session: sess, DivergedTurn: -1}}
	for i, r := range recorded {
		switch r.Type() {
		case session.TypeStepStart:
			x.byStep[[2]int{r.Turn(), r.Step()}] = i
		case session.TypeRequestOneshot:
			next := 0
			for _, r := range recorded[i:] {
				if r.Type() == session.TypeTurnStart {
					next = r.Turn()
					break
				}
			}
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
	defer agentloop.LLMStream.On(c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
		if req.Session != sess.ID() {
			return next(ctx, req)
		}
		return x.stream(ctx, req, next)
	}, bus.Prepend)()
	defer agentloop.ToolExecute.On(c, func(ctx context.Context, inv *agentloop.ToolInvocation, next bus.Next[*agentloop.ToolInvocation, agentloop.ToolOutput]) (agentloop.ToolOutput, error) {
		if inv.Session != sess.ID() || x.diverged() {
			return next(ctx, inv)
		}
		out := x.box.execute(inv)
		if abort, after := x.abortState(); abort != nil && inv.Call.ID == after {
			abort() // the recorded turn was cancelled while this call ran
		}
		return out, nil
	}, bus.Prepend)()
	defer agentloop.ToolApprove.On(c, func(_ context.Context, q *agentloop.ApprovalQuery) (agentloop.Verdict, error) {
		if q.Session != sess || x.diverged() {
			return agentloop.Verdict{}, nil
		}
		return x.ap.verdict(q.Call), nil
	}, bus.Prepend)()

	// The fence stops the loop where a recorded process died, counted
	// from the turn's turn/start in the rerun.
	shape := &rerun{recs: recorded, byStep: map[[2]int]*Step{}}
	for _, st := range x.steps {
		shape.byStep[[2]int{st.Turn, st.Step}] = st
	}
	fenceRel, fence := int64(-1), int64(-1)
	defer bus.Veto.On(c, func(_ context.Context, d bus.Dispatch) error {
		cm, ok := d.Payload.(live.Commit)
		if !ok || cm.Session() != sess || fenceRel < 0 || x.live && x.diverged() {
			return nil
		}
		if cm.Record().Type() == session.TypeTurnStart && fence < 0 {
			fence = cm.Record().Seq() + fenceRel
		}
		if fence >= 0 && cm.Record().Seq() >= fence {
			return errCrashed
		}
		return nil
	})()

	for i := indexIn(orig, opts.From); i < len(recorded); i++ {
		r := recorded[i]
		if r.Type() != session.TypeTurnStart {
			continue
		}
		x.turn = i
		end := i + 1
		for end < len(recorded) && recorded[end].Turn() == r.Turn() && recorded[end-1].Type() != session.TypeTurnEnd {
			end++
		}
		crash := -1
		if last := recorded[end-1]; last.Type() != session.TypeTurnEnd {
			crash = end
		} else if p := shape.crashPoint(i, end); p >= 0 {
			crash = p
		}
		if crash >= 0 && !x.diverged() {
			shape.failedBeforeCrash(i, crash)
			fenceRel, fence = int64(crash-i), -1
		}
		tctx, cancel := context.WithCancelCause(ctx)
		x.setAbort(nil, "")
		if after, cause, ok := aborted(recorded, i, end); ok && crash < 0 {
			x.setAbort(func() { cancel(cause) }, after)
		}
		var err error
		if continues(r) > 0 {
			_, err = agent.Continue(tctx, sess)
		} else {
			_, err = agent.Run(tctx, sess, prompt(recorded, i))
		}
		for errors.Is(err, agentloop.ErrSuspended) && x.decide(ctx, sess) {
			_, err = agent.Resume(tctx, sess)
		}
		cancel(nil)
		if fenceRel >= 0 {
			fenceRel, fence = -1, -1
			if errors.Is(err, errCrashed) {
				// Closed the way crash repair closed the dead process's turn.
				err = nil
				for _, ev := range session.CloseTail(sess.Records()) {
					if _, aerr := sess.Append(ctx, ev); aerr != nil {
						return nil, fmt.Errorf("replay: repair turn %d: %w", r.Turn(), aerr)
					}
				}
			}
		}
		if err != nil && !errors.Is(err, ErrDiverged) && !x.aborting() {
			x.out.Errors = append(x.out.Errors, err)
		}
		// A recorded request the rerun never sent is a divergence too:
		// a composition that refuses every turn compares nothing.
		if d := x.unsent(sess, r.Turn(), err); d != nil {
			x.diverge(d)
		}
		if errors.Is(err, agentloop.ErrSuspended) {
			break // left waiting for a decision the recording does not have
		}
		if x.diverged() && !x.live {
			break
		}
	}
	return x.out, nil
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
			Actual: fmt.Sprintf("a request of %d messages", len(req.Messages))}, nil
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
			Actual: fmt.Sprintf("a request of %d messages", len(req.Messages))}, nil
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
func diffRequest(wh session.Header, wm []session.Message, gh session.Header, gm []session.Message) *Divergence {
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
	for i := range max(len(wm), len(gm)) {
		var want, got string
		if i < len(wm) {
			want = render(wm[i])
		} else {
			want = "(no message)"
		}
		if i < len(gm) {
			got = render(gm[i])
		} else {
			got = "(no message)"
		}
		if i >= len(wm) || i >= len(gm) || !wm[i].Equal(&gm[i]) {
			return &Divergence{Field: fmt.Sprintf("messages[%d]", i), Expected: want, Actual: got}
		}
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
