package external

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/vigil-run/vigil/agentloop"
	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// A plugin that validates tool/call events is asked about each call the
// agent loop proposes (the tool/approve dispatch, before the call is
// logged), because only then can it answer ask: the loop turns an
// [*agentloop.AskError] of that dispatch into an approval/request, while
// a refused commit only blocks the turn. Its answer is kept for the
// commit of the very same call, which is not sent again: the plugin is
// asked once per call, and an ask is not mistaken for a refusal when the
// call it asked about is logged.

// propose asks the plugin about a tool call the loop is about to log. It
// answers ask with an [*agentloop.AskError] by the plugin; any other
// answer (an allow, a veto, no answer) is left to the call's commit,
// where vetoes always were.
func (l *listeners) propose(ctx context.Context, q *agentloop.ApprovalQuery) error {
	rec, err := session.NewRecord(0, time.Now(), session.Event{Type: session.TypeToolCall, Turn: q.Turn, Step: q.Step, Data: q.Call})
	if err != nil {
		// Not a loggable call: its append fails without the plugin.
		return nil
	}
	sid := q.Session.ID()
	ev := &pluginpb.Event{Name: EventSession, Session: sid, Type: session.TypeToolCall, Record: rec.Bytes(), Proposed: true}
	resp, err := l.call(ctx, ev)
	if err != nil && ctx.Err() != nil {
		// The turn is being cancelled; the loop still logs the call (to
		// answer it), with a context of its own: ask again then.
		return nil
	}
	l.answers.put(sid, q.Turn, q.Step, q.Call.ID, answer{data: rec.Data(), resp: resp, err: err})
	if err == nil && resp.GetAsk() {
		return &agentloop.AskError{By: l.name, Reason: session.Excerpt(resp.GetReason(), maxReason)}
	}
	return nil
}

// call sends ev to the plugin's Validate, bounded by the timeout.
func (l *listeners) call(ctx context.Context, ev *pluginpb.Event) (*pluginpb.ValidateResponse, error) {
	cctx, cancel := l.cn.callCtx(ctx)
	defer cancel()
	resp, err := l.cn.rpc.Validate(cctx, ev)
	if err != nil {
		return nil, l.cn.callErr(ctx, "validate "+ev.GetType(), err)
	}
	return resp, nil
}

// answer is the plugin's answer to a proposed call.
type answer struct {
	data []byte // the data of the call's record, as the plugin saw it
	resp *pluginpb.ValidateResponse
	err  error
}

// maxAnswerSessions bounds the sessions whose answers are kept. An answer
// outlives its use only when the proposed call is never logged (another
// plugin blocked the step); evicting one costs a second Validate at the
// commit, where an ask is then refused: fail closed.
const maxAnswerSessions = 1024

// answers holds, per session, the answers to the calls of the step last
// proposed, until their commit takes them.
type answers struct {
	mu sync.Mutex
	m  map[string]*stepAnswers
}

type stepAnswers struct {
	turn, step int
	calls      map[string]answer
}

func (a *answers) put(sid string, turn, step int, id string, ans answer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]*stepAnswers{}
	}
	s := a.m[sid]
	if s == nil || s.turn != turn || s.step != step {
		if s == nil && len(a.m) >= maxAnswerSessions {
			for k := range a.m {
				delete(a.m, k)
				break
			}
		}
		s = &stepAnswers{turn: turn, step: step, calls: map[string]answer{}}
		a.m[sid] = s
	}
	s.calls[id] = ans
}

// take removes and returns the answer to the proposal of the tool/call
// rec of session sid, if rec is exactly what was proposed.
func (a *answers) take(sid string, rec session.Record) (answer, bool) {
	c, err := session.DecodeData[session.ToolCall](rec)
	if err != nil {
		return answer{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.m[sid]
	if s == nil || s.turn != rec.Turn() || s.step != rec.Step() {
		return answer{}, false
	}
	ans, ok := s.calls[c.ID]
	if !ok {
		return answer{}, false
	}
	delete(s.calls, c.ID)
	if len(s.calls) == 0 {
		delete(a.m, sid)
	}
	return ans, bytes.Equal(ans.data, rec.Data())
}

// validate asks the plugin about a record before it is committed (or
// takes its answer to the proposal of the same tool call). A plugin that
// fails to answer refuses it: a policy that cannot be consulted does not
// let events through, unless it fails open. An ask refuses anything but
// a proposed tool call: nothing else can wait for a decision.
func (l *listeners) validate(ctx context.Context, cm live.Commit) error {
	var (
		ans      answer
		proposed bool
	)
	if cm.Record().Type() == session.TypeToolCall {
		ans, proposed = l.answers.take(cm.Session().ID(), cm.Record())
	}
	if !proposed {
		ans.resp, ans.err = l.call(ctx, commitEvent(cm))
	}
	resp, err := ans.resp, ans.err
	if err != nil {
		if l.open && ctx.Err() == nil {
			l.cn.log.Warn("validation got no answer; the event passes (fail: open)", "type", cm.Record().Type(), "error", err)
			return nil
		}
		return l.unavailable(err, cm.Record())
	}
	switch {
	case resp.GetAsk() && proposed:
		// The loop logs the approval/request right after the call.
		return nil
	case resp.GetAsk():
		return &VetoError{Plugin: l.name, Code: session.Excerpt(resp.GetCode(), maxCode), Reason: session.Excerpt(resp.GetReason(), maxReason), Ask: true, Type: cm.Record().Type()}
	case resp.GetVeto():
		return &VetoError{Plugin: l.name, Code: session.Excerpt(resp.GetCode(), maxCode), Reason: session.Excerpt(resp.GetReason(), maxReason)}
	}
	return nil
}

// unavailable is the refusal of rec whose validation failed with err:
// when the process went away while it was asked (stopped for a reload,
// or exited), the [*UnavailableError] the entry's gate gives the calls
// that come after, so that a call racing a reload is refused as the next
// one is; any other error as it is.
func (l *listeners) unavailable(err error, rec session.Record) error {
	if !errors.Is(err, ErrExited) {
		return err
	}
	e := &UnavailableError{Entry: l.entry, Plugin: l.name, Type: rec.Type()}
	if !l.cn.stopping.Load() {
		e.Exit = exitString(l.cn.proc.exitErr())
	}
	return e
}

// A plugin's code and reason are quoted in errors, and so in the turn/end
// and approval/request records that carry them, bounded: a plugin that
// echoes a call's arguments whole (megabytes) does not grow them.
const (
	maxCode   = 64
	maxReason = 1 << 10
)
