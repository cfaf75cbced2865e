package invariants

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// Modes.
const (
	ModeStrict = "strict"
	ModeWarn   = "warn"
	ModeOff    = "off"
)

// Config is the plugin's config.
type Config struct {
	// Mode is strict (the default), warn or off.
	Mode string `yaml:"mode" enum:"strict,warn,off" doc:"strict (default): refuse; warn: report only; off: register nothing"`
}

// Validate checks the mode.
func (c *Config) Validate() error {
	switch c.Mode {
	case "", ModeStrict, ModeWarn, ModeOff:
		return nil
	}
	return fmt.Errorf("mode must be strict, warn or off, got %q", c.Mode)
}

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
const Name = "invariants"

// plugin is the registered plugin; New hands it out.
var plugin = bus.RegisterFunc(Name, "dev-mode checks: model-visible requests equal a fresh fold of the log; log and status rules",
	func(c *bus.Context, cfg Config) error {
		mode := cfg.Mode
		if mode == "" {
			mode = ModeStrict
		}
		if mode == ModeOff {
			return nil
		}
		return mount(c, mode)
	},
	bus.Optional(live.Sessions),
)

// New returns the invariants plugin. Apply it with a [Config] (or none,
// for strict mode).
func New() bus.Plugin { return plugin }

// checker is the state of one mounted plugin.
type checker struct {
	ctx  *bus.Context
	mode string
	log  hclog.Logger

	mu       sync.Mutex
	sessions map[string]*sessionState
	status   map[string]string // agent → last status
}

type sessionState struct {
	sess   *live.Session
	trace  *trace
	staged map[session.Record]struct{}
	// checked is how far the plugin compared the last request it passed.
	checked checkedPrefix
}

func mount(c *bus.Context, mode string) error {
	k := &checker{ctx: c, mode: mode, log: c.Logger(), sessions: map[string]*sessionState{}, status: map[string]string{}}
	// Installed mid-session: rebuild the trace of every live session.
	if mgr, err := live.Sessions.Get(c); err == nil {
		for _, s := range mgr.Live() {
			k.rebuild(s)
		}
	}
	// Global, so that a scoped mount keeps the audience it must check.
	// The request check is a veto listener too (see onDispatch): the bus
	// runs every veto listener before any listener of the dispatch, so no
	// llm/stream listener, whenever registered, runs before it.
	bus.Veto.On(c, k.onDispatch, bus.Global)
	live.Committed.On(c, k.onCommitted, bus.Global)
	live.Loading.On(c, k.onLoading, bus.Global)
	live.Created.On(c, k.onCreated, bus.Global)
	agentloop.StatusEvent.On(c, k.onStatus, bus.Global)
	return nil
}

// refuse reports v: in strict mode as the error to return, in warn mode as
// an invariant/violation event and a warning.
func (k *checker) refuse(ctx context.Context, v *Violation) error {
	if k.mode == ModeStrict {
		return &InvariantError{Code: Code, Violation: *v}
	}
	k.log.Warn("invariant violated", "rule", v.Rule, "session", v.Session, "seq", v.Seq, "index", v.Index, "message", v.Message)
	if err := ViolationEvent.Emit(ctx, k.ctx, v); err != nil {
		k.log.Error("invariant/violation listener failed", "error", err)
	}
	return nil
}

// state returns the state of s, building its trace from its log the first
// time the plugin meets it. Called with k.mu held.
func (k *checker) state(s *live.Session) *sessionState {
	st, ok := k.sessions[s.ID()]
	if !ok || st.sess != s {
		st = k.rebuildLocked(s)
	}
	return st
}

func (k *checker) rebuild(s *live.Session) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.rebuildLocked(s)
}

func (k *checker) rebuildLocked(s *live.Session) *sessionState {
	t, v := replay(s.Records())
	if v != nil {
		v.Session = s.ID()
		k.log.Warn("log of a session already breaks an invariant", "session", s.ID(), "violation", v.String())
	}
	return k.keepLocked(s, t)
}

// keepLocked keeps t as the trace of s for the session's lifetime: its
// close drops it (unless a later copy of the session replaced it).
// Called with k.mu held.
func (k *checker) keepLocked(s *live.Session, t *trace) *sessionState {
	st := &sessionState{sess: s, trace: t, staged: map[session.Record]struct{}{}}
	if s.OnClose(func() { k.forget(st) }) {
		k.sessions[s.ID()] = st
	} else if k.sessions[s.ID()] != nil && k.sessions[s.ID()].sess == s {
		delete(k.sessions, s.ID())
	}
	return st
}

// forget drops st once its session is closed.
func (k *checker) forget(st *sessionState) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sessions[st.sess.ID()] == st {
		delete(k.sessions, st.sess.ID())
	}
}

// onLoading checks a log as it is loaded: each record is checked and
// applied to a new trace in the pass that decodes and folds it, with the
// payload its decoder read, and the trace is kept for the session made of
// the log (see opened). A log is checked once, never read again for it.
func (k *checker) onLoading(ctx context.Context, l *live.Load) error {
	p := newReplayer()
	l.Each(p.add)
	l.Opened(func(ctx context.Context, s *live.Session) error { return k.keepChecked(ctx, s, p) })
	return nil
}

// onCreated replays seeded and forked sessions into a new trace; a
// loaded session was checked as it was read (see onLoading).
func (k *checker) onCreated(ctx context.Context, s *live.Session) error {
	return k.keepChecked(ctx, s, nil)
}

// keepChecked keeps the trace of s and refuses its violation: the trace p
// built as the log was loaded, or, for a session not loaded (p nil), one
// replayed from its records now. A session whose trace an append
// rebuilt already keeps that one.
func (k *checker) keepChecked(ctx context.Context, s *live.Session, p *replayer) error {
	k.mu.Lock()
	if st, ok := k.sessions[s.ID()]; ok && st.sess == s {
		k.mu.Unlock()
		return nil
	}
	var (
		t *trace
		v *Violation
	)
	if p != nil {
		t, v = p.t, p.v
	}
	if p == nil || v == nil && t.next != int64(s.Len()) {
		// Not loaded, or (which nothing does) added to after its load.
		t, v = replay(s.Records())
	}
	k.keepLocked(s, t)
	k.mu.Unlock()
	if v != nil {
		v.Session = s.ID()
		return k.refuse(ctx, v)
	}
	return nil
}

// onDispatch validates a session event before it commits and stages its
// transition under the record's identity, and checks a loop-built request
// before any llm/stream listener sees it.
func (k *checker) onDispatch(ctx context.Context, d bus.Dispatch) error {
	if d.Name == agentloop.LLMStream.Name() {
		if req, ok := d.Payload.(*agentloop.Request); ok && req != nil {
			return k.checkRequest(ctx, req)
		}
		return nil
	}
	if d.Name != live.Committed.Name() {
		return nil
	}
	c, ok := d.Payload.(live.Commit)
	if !ok || c.IsZero() {
		return nil
	}
	k.mu.Lock()
	st := k.state(c.Session())
	v := st.trace.validate(c.Record())
	if v == nil || k.mode != ModeStrict {
		st.staged[c.Record()] = struct{}{}
	}
	k.mu.Unlock()
	if v != nil {
		v.Session = c.Session().ID()
		return k.refuse(ctx, v)
	}
	return nil
}

// onCommitted applies the staged transition of the committed record.
func (k *checker) onCommitted(ctx context.Context, c live.Commit) error {
	k.mu.Lock()
	st := k.state(c.Session())
	if st.trace.next > c.Record().Seq() {
		// The trace was just rebuilt from a log that already holds it.
		k.mu.Unlock()
		return nil
	}
	_, staged := st.staged[c.Record()]
	// Appends to one session are serial: any other staged record was vetoed.
	clear(st.staged)
	var v *Violation
	if !staged {
		v = violation(RuleStaging, c.Record().Seq(), "%s committed without passing pre-commit validation", c.Record().Type())
		v.Session = c.Session().ID()
	}
	st.trace.apply(c.Record())
	k.mu.Unlock()
	if v != nil {
		return k.refuse(ctx, v)
	}
	return nil
}

// checkRequest checks a loop-built request against a fresh fold of its
// log. It runs in the veto phase of the llm/stream dispatch, so it can
// refuse the dispatch but no listener can answer the request before it.
func (k *checker) checkRequest(ctx context.Context, req *agentloop.Request) error {
	if !req.LoopBuilt() {
		return nil
	}
	k.mu.Lock()
	st, ok := k.sessions[req.Session]
	var (
		fold   []session.Message
		h      session.Header
		headed bool
		own    bool
		orphan bool
		from   int
	)
	if ok && !st.trace.broken && st.trace.stepOpen && st.trace.stepAt == req.StepStart {
		// The plugin's own fold as it stood at the step's step/start,
		// and the latest header, from the records it saw committed. The
		// fold's messages are never written once made, so they are
		// compared outside the lock.
		fold, h, headed, own = st.trace.stepMsgs, st.trace.header, st.trace.headed, true
		orphan = st.trace.stepOrphan
		from = st.checked.from(fold, req.Messages)
	}
	k.mu.Unlock()
	var v *Violation
	switch {
	case !ok:
		v = &Violation{Rule: RuleRequestReconstruction, Seq: -1, Index: -1, Message: "request for a session whose log the plugin has not seen"}
	case own:
		v = checkAgainst(fold, h, headed, orphan, req, from)
		if v == nil {
			k.mu.Lock()
			st.checked = checkedTo(fold, req.Messages)
			k.mu.Unlock()
		}
	default:
		v = CheckRequest(st.sess.Records(), req)
	}
	if v != nil {
		v.Session = req.Session
		return k.refuse(ctx, v)
	}
	return nil
}

// checkAgainst runs the request rules on req against the fold and header
// the plugin derived itself, comparing the messages from position from
// on (see checkedPrefix). The fold is kept as messages, in one array:
// comparing a request with it reads two arrays in order, where projecting
// each surface record again would chase a pointer per message. A request
// that equals the fold has an orphaned tool result just when the fold
// has one (orphan), which is found only then, in the fold.
func checkAgainst(fold []session.Message, h session.Header, headed, orphan bool, req *agentloop.Request, from int) *Violation {
	if v := requestReconstructionFrom(fold, req.Messages, from); v != nil {
		return v
	}
	if v := requestHeader(h, headed, req.Header); v != nil {
		return v
	}
	if !orphan {
		return nil
	}
	return orphanedToolResult(fold) // the request equals it
}

// onStatus checks agent status transitions.
func (k *checker) onStatus(ctx context.Context, ch agentloop.StatusChange) error {
	k.mu.Lock()
	last := k.status[ch.Agent]
	v := statusTransition(ch.Agent, last, string(ch.From), string(ch.To))
	if v == nil || k.mode != ModeStrict {
		k.status[ch.Agent] = string(ch.To)
	}
	k.mu.Unlock()
	if v != nil {
		return k.refuse(ctx, v)
	}
	return nil
}

// CheckRequest runs the request rules on a loop-built request against the
// records of its session: request-reconstruction against a fresh fold of
// the records before the in-flight step's step/start, request-header
// against the latest request/header, then orphaned-tool-result on the
// request itself. The fold is compared message by message as it is
// derived from the records, sharing nothing with the live session's fold;
// only a violation builds the lists to report the divergence.
func CheckRequest(records []session.Record, req *agentloop.Request) *Violation {
	if req.StepStart < 0 || req.StepStart >= int64(len(records)) || records[req.StepStart].Type() != session.TypeStepStart {
		return &Violation{Rule: RuleRequestReconstruction, Seq: req.StepStart, Index: -1,
			Message: fmt.Sprintf("the request names step/start seq %d, which the log does not hold", req.StepStart)}
	}
	sent := req.Messages
	equal, h, ok, err := session.MatchRequest(records, int(req.StepStart), sent)
	if err != nil {
		return &Violation{Rule: RuleRequestReconstruction, Seq: -1, Index: -1, Message: fmt.Sprintf("the log does not fold: %v", err)}
	}
	var fold []session.Message // what the request equals
	if equal {
		fold = sent.Clone()
	} else {
		fold, _, _, _ = session.DeriveRequest(records, int(req.StepStart))
		if v := requestReconstruction(fold, sent); v != nil {
			return v
		}
	}
	if v := requestHeader(h, ok, req.Header); v != nil {
		return v
	}
	return orphanedToolResult(fold)
}
