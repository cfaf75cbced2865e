package playground

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// Errors of the page's actions.
var (
	// errNotShown: the session named is not one the page shows.
	errNotShown = errors.New("playground: no such session on the page")
	// errInvalid: the action's arguments make no sense.
	errInvalid = errors.New("playground: invalid request")
)

// turnTimeout bounds one turn the page sends.
const turnTimeout = 30 * time.Second

// sendRequest is the page's "send the next request": the next turn, on a
// fork of the session shown, with at most one tampering.
type sendRequest struct {
	Session string `json:"session"`
	// Prompt is the turn's user message (default DefaultPrompt).
	Prompt string `json:"prompt"`
	// Delete, when set, is the seq of the event to remove from a copy of
	// the log; the request is then built the way a loop that kept its own
	// message list would build it: from the original log.
	Delete *int64 `json:"delete,omitempty"`
	// Edit, when set, changes the loop-built request on its way to the
	// model, bypassing the log.
	Edit *edit `json:"edit,omitempty"`
}

// Edit targets.
const (
	targetMessage = "message"
	targetSystem  = "system"
)

// edit changes one message's content, or the system prompt, of the
// request.
type edit struct {
	Target  string `json:"target"`
	Index   int    `json:"index"`
	Content string `json:"content"`
}

// Stages a send ends at.
const (
	stageSeed    = "seed"    // the forged log was refused when seeded
	stageFork    = "fork"    // the session could not be forked
	stageRequest = "request" // the invariants plugin refused the request
	stageTurn    = "turn"    // the turn failed otherwise
	stageSent    = "sent"    // the request reached the model
)

// Marks of the comparison.
const (
	markMatch     = "match"
	markDiverge   = "diverge"
	markUnchecked = "unchecked"
)

// sendResult is what the page shows of a send.
type sendResult struct {
	// Session is the session the turn ran on, as it is afterwards.
	Session *sessionView `json:"session,omitempty"`
	Tamper  string       `json:"tamper"`
	Stage   string       `json:"stage"`
	// Request is the request as it reached the invariants plugin.
	Request *requestView `json:"request,omitempty"`
	// Expected is what the plugin compared it with: the fresh fold of the
	// log before the step's step/start and the latest request/header.
	Expected *requestView `json:"expected,omitempty"`
	// Compare marks each message position: a match, the first divergence,
	// and what the plugin no longer compared after it.
	Compare []check `json:"compare,omitempty"`
	// Header marks the header comparison, which follows the messages'.
	Header    string                `json:"header,omitempty"`
	Violation *invariants.Violation `json:"violation,omitempty"`
	Error     string                `json:"error,omitempty"`
	// Reply is the model's answer when the request was sent.
	Reply string `json:"reply,omitempty"`
}

type requestView struct {
	Turn      int               `json:"turn"`
	Step      int               `json:"step"`
	StepStart int64             `json:"step_start"`
	Header    session.Header    `json:"header"`
	Messages  []session.Message `json:"messages"`
}

type check struct {
	Index int    `json:"index"`
	Mark  string `json:"mark"`
}

// send runs the next turn on a fork of the session shown, tampered with
// as asked, and reports what the invariants plugin made of its request.
// The demo session itself is never written: a delete seeds a new session,
// anything else forks the demo, or continues a fork in place.
func (v *visitor) send(req sendRequest) (*sendResult, error) {
	if err := v.lock(); err != nil {
		return nil, err
	}
	defer v.act.Unlock()
	ctx, cancel := context.WithTimeout(v.srv.base, turnTimeout)
	defer cancel()
	base, ok := v.hub.records(req.Session)
	if !ok {
		return nil, fmt.Errorf("%w: %q", errNotShown, req.Session)
	}
	prompt := req.Prompt
	if prompt == "" {
		prompt = DefaultPrompt
	}
	if req.Delete != nil && req.Edit != nil {
		return nil, fmt.Errorf("%w: delete or edit, not both", errInvalid)
	}
	res := &sendResult{Tamper: "none: the request is built from the log"}
	sess, tamper, err := v.tampered(ctx, req, base, res)
	if err != nil {
		return nil, err
	}
	if sess == nil {
		return res, nil // res says at which stage it stopped
	}
	run, err := v.srv.runTampered(ctx, sess, prompt, tamper)
	if err != nil {
		return nil, err
	}
	if err := res.report(sess, run); err != nil {
		return nil, err
	}
	if sv, ok := v.hub.snapshot(sess.ID()); ok {
		res.Session = &sv
	}
	return res, nil
}

// tampered returns the session the turn asked for runs on and how its
// request is tampered with (nil: not at all), with res.Tamper saying so.
// A nil session and error: the session could not be made, and res says
// why.
func (v *visitor) tampered(ctx context.Context, req sendRequest, base *view, res *sendResult) (*live.Session, func(*agentloop.Request), error) {
	if req.Delete != nil {
		return v.deleted(ctx, base, *req.Delete, res)
	}
	sess, err := v.continuation(ctx, base)
	if err != nil {
		res.Stage, res.Error, res.Violation = stageFork, err.Error(), violationOf(err)
		return nil, nil, nil
	}
	var tamper func(*agentloop.Request)
	if e := req.Edit; e != nil {
		if tamper, res.Tamper, err = e.apply(); err != nil {
			return nil, nil, err
		}
	}
	return sess, tamper, nil
}

// deleted seeds a session with base's log without seq d, and returns it
// with the tampering that builds the request from the original log, as
// a loop that kept its own message list would.
func (v *visitor) deleted(ctx context.Context, base *view, d int64, res *sendResult) (*live.Session, func(*agentloop.Request), error) {
	s := v.srv
	forged, err := without(base.records, d)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errInvalid, err)
	}
	// The loop with its own message list still has what the log lost.
	own, err := session.DeriveMessages(base.records)
	if err != nil {
		return nil, nil, err
	}
	kept, err := session.DeriveMessages(forged)
	if err != nil {
		kept = nil // the seed below refuses the log and says why
	}
	typ := base.records[d].Type()
	res.Tamper = fmt.Sprintf("seq %d (%s) deleted from a copy of the log; the request is built from the original, as by a loop that kept its own message list", d, typ)
	sess, err := s.mgr.SeedRecords(ctx, forged)
	if err != nil {
		res.Stage, res.Error, res.Violation = stageSeed, err.Error(), violationOf(err)
		return nil, nil, nil
	}
	s.track(v, sess, kindForged, fmt.Sprintf("%s−%d", base.label, d),
		fmt.Sprintf("%s without seq %d (%s), renumbered", base.label, d, typ))
	n := len(kept)
	return sess, func(r *agentloop.Request) {
		// This turn's messages follow what the forged log folds to.
		sent := r.Messages.Clone()
		r.Messages = session.NewMessages(append(own, sent[min(n, len(sent)):]...))
	}, nil
}

// tamperedRun is what runTampered saw of a turn.
type tamperedRun struct {
	turn *agentloop.TurnResult
	err  error // the error the turn ended with
	// sent is the turn's first loop-built request as it reached the
	// invariants plugin (nil: none did), at the session's length then.
	sent *requestView
	at   int
}

// runTampered runs a turn of prompt on sess with the scripted model and
// calc, tampering with its first loop-built request. The tampering is a
// veto listener of llm/stream prepended in front of the invariants
// plugin's check (which is a veto listener too), so the plugin checks the
// request as changed. (Any later change is refused by agentloop's seal,
// not by the plugin.)
func (s *Server) runTampered(ctx context.Context, sess *live.Session, prompt string, tamper func(*agentloop.Request)) (*tamperedRun, error) {
	run := &tamperedRun{}
	dispose := bus.Veto.On(sess.Context(), func(ctx context.Context, d bus.Dispatch) error {
		r, ok := d.Payload.(*agentloop.Request)
		if !ok || d.Name != agentloop.LLMStream.Name() {
			return nil
		}
		if r.LoopBuilt() && run.sent == nil {
			if tamper != nil {
				tamper(r)
			}
			run.sent = viewOf(r)
			run.at = sess.Len()
		}
		return nil
	}, bus.Prepend)
	model, err := scripted.New(nextScript())
	if err != nil {
		dispose()
		return nil, err
	}
	agent := agentloop.New(s.c, agentConfig, agentloop.WithProvider(model), agentloop.WithTools(calc.Tool{}), agentloop.WithName("playground"))
	run.turn, run.err = agent.Run(ctx, sess, prompt)
	dispose()
	if err := agent.Close(); err != nil {
		s.opts.Logger.Error("closing the agent", "error", err)
	}
	return run, nil
}

// report fills res with what the invariants plugin compared the request
// sent on sess with, and the stage the turn ended at.
func (res *sendResult) report(sess *live.Session, run *tamperedRun) error {
	if sent := run.sent; sent != nil {
		recs := sess.Records()
		want, err := session.DeriveMessages(recs[:sent.StepStart])
		if err != nil {
			return err
		}
		h, _ := session.DeriveHeader(recs[:run.at])
		res.Request = sent
		res.Expected = &requestView{Turn: sent.Turn, Step: sent.Step, StepStart: sent.StepStart, Header: h, Messages: want}
		res.Compare, res.Header = compare(want, h, sent)
	}
	res.Violation = violationOf(run.err)
	switch {
	case res.Violation != nil && run.sent != nil:
		res.Stage = stageRequest
	case run.err != nil:
		res.Stage = stageTurn
	default:
		res.Stage = stageSent
		if run.turn != nil {
			res.Reply = run.turn.Content
		}
	}
	if run.err != nil {
		res.Error = run.err.Error()
	}
	return nil
}

// continuation returns the session the next turn of base runs on: a fork
// of the demo at its last event shown, or a fork itself.
func (v *visitor) continuation(ctx context.Context, base *view) (*live.Session, error) {
	s := v.srv
	if base.kind != kindDemo {
		if sess, ok := s.mgr.Get(base.info.ID); ok {
			return sess, nil
		}
		return nil, fmt.Errorf("%w: %s is closed", errNotShown, base.info.ID)
	}
	at := int64(len(base.records)) - 1
	sess, err := s.mgr.Fork(ctx, base.info.ID, at)
	if err != nil {
		return nil, err
	}
	s.track(v, sess, kindFork, fmt.Sprintf("%s@%d", base.label, at), fmt.Sprintf("a fork of %s at seq %d", base.label, at))
	return sess, nil
}

// apply returns the tampering of e and its description.
func (e *edit) apply() (func(*agentloop.Request), string, error) {
	switch e.Target {
	case targetMessage:
		i, content := e.Index, e.Content
		if i < 0 {
			return nil, "", fmt.Errorf("%w: message index %d", errInvalid, i)
		}
		return func(r *agentloop.Request) {
			if i < r.Messages.Len() {
				ms := r.Messages.Clone()
				ms[i].Content = content
				r.Messages = session.NewMessages(ms)
			}
		}, fmt.Sprintf("message %d of the request edited on its way to the model, bypassing the log", i), nil
	case targetSystem:
		content := e.Content
		return func(r *agentloop.Request) { r.Header.System = content },
			"the system prompt of the request edited on its way to the model, bypassing the log", nil
	}
	return nil, "", fmt.Errorf("%w: edit target %q (message or system)", errInvalid, e.Target)
}

// viewOf copies a request.
func viewOf(r *agentloop.Request) *requestView {
	return &requestView{Turn: r.Turn, Step: r.Step, StepStart: r.StepStart,
		Header: session.CloneHeader(r.Header), Messages: r.Messages.Clone()}
}

// compare marks sent against the fold and header it must equal, in the
// invariants plugin's order: messages position by position up to the
// first divergence, then the header.
func compare(want []session.Message, h session.Header, sent *requestView) ([]check, string) {
	got := sent.Messages
	out := make([]check, max(len(want), len(got)))
	diverged := false
	for i := range out {
		mark := markMatch
		switch {
		case diverged:
			mark = markUnchecked
		case i >= len(want) || i >= len(got) || !want[i].Equal(&got[i]):
			mark, diverged = markDiverge, true
		}
		out[i] = check{Index: i, Mark: mark}
	}
	switch {
	case diverged:
		return out, markUnchecked
	case session.HeaderEquals(h, sent.Header):
		return out, markMatch
	}
	return out, markDiverge
}

// violationOf returns the violation a strict invariants plugin refused
// with, if err is such a refusal.
func violationOf(err error) *invariants.Violation {
	var ie *invariants.InvariantError
	if errors.As(err, &ie) {
		v := ie.Violation
		return &v
	}
	return nil
}
