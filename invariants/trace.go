package invariants

import (
	"slices"

	"github.com/vigil-run/vigil/session"
)

// trace is what the append rules know of one session's log so far. It is
// advanced only by [trace.apply], with records that passed [trace.validate].
type trace struct {
	next     int64 // the seq the next event must have
	turn     int   // number of the latest turn
	turnOpen bool
	// lastEnd is how the latest closed turn ended (its turn/end reason);
	// continuing says the open turn is a continuation.
	lastEnd    string
	continuing bool
	step       int // number of the latest step of the open turn
	stepOpen   bool
	calls      map[string]callInfo // every tool call id of the session
	// msgCalls are the tool calls named by the open step's assistant
	// messages: a synthetic TOOL_NOT_STARTED result may answer them.
	msgCalls map[string]bool
	chunks   map[int64]session.AssistantChunk // the open step's chunks
	cited    map[int64]bool                   // chunks an assistant message cites
	appr     approvals                        // what approval-before-run knows
	recon    reconciles                       // what tool-retry and tool-reconcile know
	dec      decoded                          // the record being read, read once
	asm      []assembling                     // assistantAssembly's scratch

	// The plugin's own fold of the log, for request-reconstruction: the
	// surface records, in surface order, and their projections, made
	// from the records the plugin saw committed, sharing nothing with the
	// live session's fold but the pure per-record projection
	// (session.Project). msgs only grows in place; a replace makes a new
	// slice, so a view of it taken at a step/start stays that step's fold.
	surfRecs []session.Record
	msgs     []session.Message
	stepAt   int64             // seq of the latest step/start, -1 before any
	stepMsgs []session.Message // the fold before it
	// surfCalls counts the tool calls of the fold's assistant messages by
	// id, and orphan says a tool message of the fold answers none made
	// before it (orphaned-tool-result); stepOrphan is orphan at the latest
	// step/start. A request equal to the fold has an orphan just when the
	// fold has one, so the rule costs nothing per request.
	surfCalls  map[string]int
	orphan     bool
	stepOrphan bool
	header     session.Header // the latest request/header, normalized
	headed     bool
	broken     bool // replay stopped at a violation: the fold is not the log's
}

type callInfo struct {
	turn, step int
	seq        int64
	answered   bool
	logged     bool // a tool/call event exists (not only a message's call)
	// result is the seq of its tool/result, unknown says that result is
	// TOOL_OUTCOME_UNKNOWN, reconciled is the seq of its tool/reconcile
	// (-1 when none).
	result     int64
	unknown    bool
	reconciled int64
}

func newTrace() *trace {
	return &trace{calls: map[string]callInfo{}, msgCalls: map[string]bool{}, chunks: map[int64]session.AssistantChunk{}, cited: map[int64]bool{}, appr: newApprovals(), stepAt: -1}
}

// validate runs every append rule against r, without changing t.
func (t *trace) validate(r session.Record) *Violation {
	for _, rule := range appendRules {
		if v := rule(t, r); v != nil {
			return v
		}
	}
	return nil
}

// appendRules run in this order; the first violation is reported.
var appendRules = []func(*trace, session.Record) *Violation{
	seqOrder,
	turnEnclosure,
	turnNesting,
	stepNesting,
	stepScope,
	toolPairing,
	surfaceReplace,
	assistantAssembly,
	approvalBeforeRun,
	toolRetry,
	toolReconcile,
}

// apply advances t past r, which passed validate: the approval and
// reconcile state, the turn and step bounds, the open step's calls, and
// the plugin's own fold.
func (t *trace) apply(r session.Record) {
	t.next = r.Seq() + 1
	t.appr.apply(&t.dec, r)
	t.recon.apply(t, r)
	t.applyBounds(r)
	t.applyCalls(r)
	if r.IsSurface() {
		t.applySurface(r)
	}
}

// applyBounds advances the open turn and step, and the latest request
// header, past r.
func (t *trace) applyBounds(r session.Record) {
	switch r.Type() {
	case session.TypeTurnStart:
		t.turn, t.turnOpen, t.step = r.Turn(), true, 0
		ts, _ := payload[session.TurnStart](&t.dec, r)
		t.continuing = ts.Continues != 0
	case session.TypeTurnEnd:
		t.turnOpen, t.continuing = false, false
		end, _ := payload[session.TurnEnd](&t.dec, r)
		t.lastEnd = end.Reason
	case session.TypeStepStart:
		t.step, t.stepOpen = r.Step(), true
		t.stepAt, t.stepMsgs, t.stepOrphan = r.Seq(), t.msgs[:len(t.msgs):len(t.msgs)], t.orphan
	case session.TypeRequestHeader:
		t.header, t.headed = session.DeriveHeader([]session.Record{r})
	case session.TypeStepEnd:
		t.stepOpen = false
		clear(t.chunks)
		clear(t.cited)
		clear(t.msgCalls)
	}
}

// applyCalls advances what t knows of the tool calls past r: the open
// step's chunks and the calls its messages make, and every call and
// result of the session.
func (t *trace) applyCalls(r session.Record) {
	switch r.Type() {
	case session.TypeAssistantChunk:
		if c, err := payload[session.AssistantChunk](&t.dec, r); err == nil {
			t.chunks[r.Seq()] = c
		}
	case session.TypeAssistantMessage:
		if m, err := payload[session.AssistantMessage](&t.dec, r); err == nil {
			for _, c := range m.ToolCalls {
				t.msgCalls[c.ID] = true
			}
			for _, s := range t.dec.sources(r) {
				t.cited[s] = true
			}
		}
	case session.TypeToolCall:
		if c, err := payload[session.ToolCall](&t.dec, r); err == nil {
			t.calls[c.ID] = callInfo{turn: r.Turn(), step: r.Step(), seq: r.Seq(), logged: true, reconciled: -1}
		}
	case session.TypeToolResult:
		if res, err := payload[session.ToolResult](&t.dec, r); err == nil {
			ci := t.calls[res.ID]
			ci.answered, ci.result = true, r.Seq()
			ci.unknown = res.Error != nil && res.Error.Code == session.CodeToolOutcomeUnknown
			if !ci.logged {
				ci.turn, ci.step, ci.seq, ci.reconciled = r.Turn(), r.Step(), -1, -1
			}
			t.calls[res.ID] = ci
		}
	}
}

// applySurface advances the plugin's own fold past r, a surface record:
// a replace that fits the fold rebuilds its messages, anything else is
// appended.
func (t *trace) applySurface(r session.Record) {
	if sf := r.Surface(); sf.Op == session.OpReplace {
		i, j := t.position(sf.Start), t.position(sf.End)
		if i >= 0 && j >= i {
			t.surfRecs = slices.Replace(t.surfRecs, i, j+1, r)
			msgs := make([]session.Message, 0, len(t.surfRecs))
			for _, s := range t.surfRecs {
				if m, ok := session.Project(s); ok {
					msgs = append(msgs, m)
				}
			}
			t.msgs = msgs
			t.surfCalls, t.orphan = map[string]int{}, false
			for i := range msgs {
				t.countCalls(&msgs[i])
			}
			return
		}
	}
	t.surfRecs = append(grown(t.surfRecs), r)
	if m, ok := session.Project(r); ok {
		t.msgs = append(grown(t.msgs), m)
		t.countCalls(&m)
	}
}

// grown returns s with room for one more element, doubling its capacity
// when full: append grows a long slice by a quarter, so each of the
// fold's messages would be allocated about five times over, and a long
// session's step would pay for the copies.
func grown[E any](s []E) []E {
	if len(s) < cap(s) {
		return s
	}
	return slices.Grow(s, len(s)+8)
}

// position returns the index of seq on the surface, -1 when it is not on
// it. Replaces are rare; they usually end near the end of the surface.
func (t *trace) position(seq int64) int {
	for i := len(t.surfRecs) - 1; i >= 0; i-- {
		if t.surfRecs[i].Seq() == seq {
			return i
		}
	}
	return -1
}

// countCalls advances surfCalls and orphan past m, the fold's next message.
func (t *trace) countCalls(m *session.Message) {
	if t.surfCalls == nil {
		t.surfCalls = map[string]int{}
	}
	switch m.Role {
	case session.RoleAssistant:
		for _, c := range m.ToolCalls {
			t.surfCalls[c.ID]++
		}
	case session.RoleTool:
		if t.surfCalls[m.ToolCallID] == 0 {
			t.orphan = true
		}
	}
}

// replay builds a trace from a whole log, stopping at the first violation.
func replay(records []session.Record) (*trace, *Violation) {
	p := newReplayer()
	for _, r := range records {
		if p.add(r); p.v != nil {
			break
		}
	}
	return p.t, p.v
}

// replayer builds a trace from a log read record by record, in order,
// up to its first violation, v.
type replayer struct {
	t *trace
	v *Violation
}

func newReplayer() *replayer { return &replayer{t: newTrace()} }

// add checks r and applies it to the trace, unless a violation came
// before it.
func (p *replayer) add(r session.Record) {
	if p.v != nil {
		return
	}
	if v := p.t.validate(r); v != nil {
		p.t.broken, p.v = true, v
		return
	}
	p.t.apply(r)
}
