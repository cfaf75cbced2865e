package invariants

import (
	"slices"
	"strings"

	"github.com/vigil-run/vigil/session"
)

// seqOrder: seq is the next index: strictly increasing, no gaps.
func seqOrder(t *trace, r session.Record) *Violation {
	if r.Seq() != t.next {
		return violation(RuleSeqOrder, r.Seq(), "seq %d where %d was next", r.Seq(), t.next)
	}
	return nil
}

// turnEnclosure: request/header and request/digest only inside a turn;
// request/oneshot (a model call that is not a step) anywhere.
func turnEnclosure(t *trace, r session.Record) *Violation {
	switch r.Type() {
	case session.TypeRequestHeader, session.TypeRequestDigest:
		if !t.turnOpen {
			return violation(RuleTurnEnclosure, r.Seq(), "%s outside a turn", r.Type())
		}
		if r.Turn() != t.turn {
			return violation(RuleTurnEnclosure, r.Seq(), "%s names turn %d in turn %d", r.Type(), r.Turn(), t.turn)
		}
	}
	return nil
}

// turnNesting: turn/start only when no turn is open, numbered next;
// turn/end matches the open turn and no step is open. A continuation
// (turn/start with continues) carries on the latest turn, which ended
// interrupted, and has no user/message of its own (the loop's
// output-validation feedback is not a person's message).
func turnNesting(t *trace, r session.Record) *Violation {
	switch r.Type() {
	case session.TypeTurnStart:
		if t.turnOpen {
			return violation(RuleTurnNesting, r.Seq(), "turn/start while turn %d is open", t.turn)
		}
		if r.Turn() != t.turn+1 {
			return violation(RuleTurnNesting, r.Seq(), "turn/start numbered %d where %d was next", r.Turn(), t.turn+1)
		}
		ts, err := payload[session.TurnStart](&t.dec, r)
		if err != nil {
			return violation(RuleTurnNesting, r.Seq(), "turn/start data: %v", err)
		}
		switch n := ts.Continues; {
		case n == 0:
		case n != t.turn:
			return violation(RuleTurnNesting, r.Seq(), "turn/start continues turn %d, which is not the latest turn (%d)", n, t.turn)
		case !session.Continuable(t.lastEnd):
			return violation(RuleTurnNesting, r.Seq(), "turn/start continues turn %d, which ended %s, not %s", n, t.lastEnd, session.ContinuableReasons)
		}
	case session.TypeUserMessage:
		if t.turnOpen && t.continuing && !loopFeedback(t, r) {
			return violation(RuleTurnNesting, r.Seq(), "user/message in turn %d, a continuation (it has no user message)", t.turn)
		}
	case session.TypeTurnEnd:
		if !t.turnOpen {
			return violation(RuleTurnNesting, r.Seq(), "turn/end with no open turn")
		}
		if r.Turn() != t.turn {
			return violation(RuleTurnNesting, r.Seq(), "turn/end names turn %d while turn %d is open", r.Turn(), t.turn)
		}
		if t.stepOpen {
			return violation(RuleTurnNesting, r.Seq(), "turn/end while step %d is open", t.step)
		}
	}
	return nil
}

// stepNesting: step/start only inside the open turn and when no step is
// open, numbered next; step/end matches the open step.
func stepNesting(t *trace, r session.Record) *Violation {
	switch r.Type() {
	case session.TypeStepStart:
		if !t.turnOpen || r.Turn() != t.turn {
			return violation(RuleStepNesting, r.Seq(), "step/start outside the open turn (names turn %d)", r.Turn())
		}
		if t.stepOpen {
			return violation(RuleStepNesting, r.Seq(), "step/start while step %d is open", t.step)
		}
		if r.Step() != t.step+1 {
			return violation(RuleStepNesting, r.Seq(), "step/start numbered %d where %d was next", r.Step(), t.step+1)
		}
	case session.TypeStepEnd:
		if !t.stepOpen {
			return violation(RuleStepNesting, r.Seq(), "step/end with no open step")
		}
		if r.Turn() != t.turn || r.Step() != t.step {
			return violation(RuleStepNesting, r.Seq(), "step/end names turn %d step %d while turn %d step %d is open", r.Turn(), r.Step(), t.turn, t.step)
		}
	}
	return nil
}

// stepScoped are the types that belong to the open step.
func stepScoped(typ string) bool {
	switch typ {
	case session.TypeAssistantChunk, session.TypeAssistantMessage, session.TypeToolCall,
		session.TypeToolStart, session.TypeToolResult, session.TypeRequestDigest,
		session.TypeApprovalRequest, session.TypeApprovalDecision, session.TypeStepUsage:
		return true
	}
	return false
}

// stepScope: chunks, assistant messages, tool calls and results name the
// open turn and step; a turn-scoped user message names the open turn.
func stepScope(t *trace, r session.Record) *Violation {
	if stepScoped(r.Type()) {
		if !t.stepOpen {
			return violation(RuleStepScope, r.Seq(), "%s outside an open step", r.Type())
		}
		if r.Turn() != t.turn || r.Step() != t.step {
			return violation(RuleStepScope, r.Seq(), "%s names turn %d step %d while turn %d step %d is open", r.Type(), r.Turn(), r.Step(), t.turn, t.step)
		}
		return nil
	}
	if r.Type() == session.TypeUserMessage && r.Turn() != 0 && (!t.turnOpen || r.Turn() != t.turn) {
		return violation(RuleStepScope, r.Seq(), "user/message names turn %d, which is not open", r.Turn())
	}
	return nil
}

// toolPairing: a tool/call is one an assistant message of its step asked
// for, with an id unique in the session; a tool/result answers a tool/call
// of the same step, once (a synthetic TOOL_NOT_STARTED result may instead
// answer a call that the step's assistant message named but that was never
// logged).
func toolPairing(t *trace, r session.Record) *Violation {
	switch r.Type() {
	case session.TypeToolCall:
		c, err := payload[session.ToolCall](&t.dec, r)
		if err != nil {
			return violation(RuleToolPairing, r.Seq(), "tool/call data: %v", err)
		}
		if c.ID == "" {
			return violation(RuleToolPairing, r.Seq(), "tool/call without an id")
		}
		if prev, ok := t.calls[c.ID]; ok {
			return violation(RuleToolPairing, r.Seq(), "tool call id %q already used (turn %d step %d)", c.ID, prev.turn, prev.step)
		}
		if !t.msgCalls[c.ID] {
			return violation(RuleToolPairing, r.Seq(), "tool/call %q was not asked for by an assistant message of this step", c.ID)
		}
	case session.TypeToolStart:
		s, err := payload[session.ToolStart](&t.dec, r)
		if err != nil {
			return violation(RuleToolPairing, r.Seq(), "tool/start data: %v", err)
		}
		if c, ok := t.calls[s.ID]; !ok || !c.logged || c.turn != r.Turn() || c.step != r.Step() {
			return violation(RuleToolPairing, r.Seq(), "tool/start for %q, which is no tool/call of this step", s.ID)
		}
	case session.TypeToolResult:
		res, err := payload[session.ToolResult](&t.dec, r)
		if err != nil {
			return violation(RuleToolPairing, r.Seq(), "tool/result data: %v", err)
		}
		c, ok := t.calls[res.ID]
		if ok && c.answered {
			return violation(RuleToolPairing, r.Seq(), "second tool/result for call %q", res.ID)
		}
		if ok && c.logged {
			if c.turn != r.Turn() || c.step != r.Step() {
				return violation(RuleToolPairing, r.Seq(), "tool/result for call %q of turn %d step %d, in turn %d step %d", res.ID, c.turn, c.step, r.Turn(), r.Step())
			}
			if src := t.dec.sources(r); len(src) != 1 || src[0] != c.seq {
				return violation(RuleToolPairing, r.Seq(), "tool/result for call %q must cite its call seq %d, cites %v", res.ID, c.seq, src)
			}
			return nil
		}
		if res.Error != nil && res.Error.Code == session.CodeToolNotStarted && t.msgCalls[res.ID] {
			return nil
		}
		return violation(RuleToolPairing, r.Seq(), "tool/result for %q answers no tool/call of this step", res.ID)
	}
	return nil
}

// surfaceReplace: replace endpoints are on the surface, in order; sources
// cite every shadowed event.
func surfaceReplace(t *trace, r session.Record) *Violation {
	if !r.IsSurface() {
		return nil
	}
	sf := r.Surface()
	if sf.Op != session.OpReplace {
		return nil
	}
	i, j := t.position(sf.Start), t.position(sf.End)
	if i < 0 || j < 0 {
		return violation(RuleSurfaceReplace, r.Seq(), "replace %d..%d: endpoint not on the surface", sf.Start, sf.End)
	}
	if j < i {
		return violation(RuleSurfaceReplace, r.Seq(), "replace %d..%d: end before start on the surface", sf.Start, sf.End)
	}
	src := t.dec.sources(r)
	for _, sr := range t.surfRecs[i : j+1] {
		if s := sr.Seq(); !slices.Contains(src, s) {
			return violation(RuleSurfaceReplace, r.Seq(), "replace %d..%d shadows seq %d but does not cite it", sf.Start, sf.End, s)
		}
	}
	return nil
}

// assistantAssembly: an assistant/message equals the concatenation of the
// chunks it cites, which are chunks of its step, in order, each cited by
// one message; a step that ends normally (finish other than "error", which
// crash repair writes) has every chunk assembled into a message.
func assistantAssembly(t *trace, r session.Record) *Violation {
	if r.Type() == session.TypeStepEnd && t.stepOpen {
		first := int64(-1)
		for seq := range t.chunks {
			if !t.cited[seq] && (first < 0 || seq < first) {
				first = seq
			}
		}
		if first < 0 {
			return nil
		}
		// Decoded only when it matters: a step ended by an error may
		// leave chunks unassembled.
		if d, err := payload[session.StepEnd](&t.dec, r); err == nil && d.Finish == session.FinishError {
			return nil
		}
		return violation(RuleAssistantAssembly, r.Seq(), "step ends with chunk %d not assembled into an assistant message", first)
	}
	if r.Type() != session.TypeAssistantMessage {
		return nil
	}
	m, err := payload[session.AssistantMessage](&t.dec, r)
	if err != nil {
		return violation(RuleAssistantAssembly, r.Seq(), "assistant/message data: %v", err)
	}
	src := t.dec.sources(r)
	if t.assembles(src, &m) {
		return nil
	}
	return t.misassembled(r.Seq(), src, &m)
}

// misassembled assembles the chunks that src cites, as message seq does,
// to find and report how m differs from them (nil if it does not). Only
// a message that its chunks do not assemble (see assembles) needs it.
func (t *trace) misassembled(seq int64, src []int64, m *session.AssistantMessage) *Violation {
	var content, reasoning strings.Builder
	var calls []session.ToolCall
	index := map[int]int{}
	prev := int64(-1)
	for _, s := range src {
		c, ok := t.chunks[s]
		if !ok {
			return violation(RuleAssistantAssembly, seq, "cites seq %d, which is no chunk of this step", s)
		}
		if t.cited[s] {
			return violation(RuleAssistantAssembly, seq, "cites chunk %d, which another assistant message already cites", s)
		}
		if s <= prev {
			return violation(RuleAssistantAssembly, seq, "cites chunks out of order (%d after %d)", s, prev)
		}
		prev = s
		content.WriteString(c.Text)
		reasoning.WriteString(c.Reasoning)
		if tc := c.ToolCall; tc != nil {
			k, ok := index[tc.Index]
			if !ok {
				k = len(calls)
				index[tc.Index] = k
				calls = append(calls, session.ToolCall{})
			}
			if tc.ID != "" {
				calls[k].ID = tc.ID
			}
			if tc.Name != "" {
				calls[k].Name = tc.Name
			}
			calls[k].Arguments += tc.Arguments
		}
	}
	if got := content.String(); got != m.Content {
		return &Violation{Rule: RuleAssistantAssembly, Seq: seq, Index: -1, Message: "content differs from its chunks", Expected: quote(got), Actual: quote(m.Content)}
	}
	if got := reasoning.String(); got != m.Reasoning {
		return &Violation{Rule: RuleAssistantAssembly, Seq: seq, Index: -1, Message: "reasoning differs from its chunks", Expected: quote(got), Actual: quote(m.Reasoning)}
	}
	if len(calls) != len(m.ToolCalls) {
		return violation(RuleAssistantAssembly, seq, "%d tool calls, its chunks assemble %d", len(m.ToolCalls), len(calls))
	}
	for i := range calls {
		if calls[i] != m.ToolCalls[i] {
			return &Violation{Rule: RuleAssistantAssembly, Seq: seq, Index: -1, Message: "tool call differs from its chunks",
				Expected: quote(calls[i].ID + " " + calls[i].Name + " " + calls[i].Arguments), Actual: quote(m.ToolCalls[i].ID + " " + m.ToolCalls[i].Name + " " + m.ToolCalls[i].Arguments)}
		}
	}
	return nil
}

// assembling is a tool call of a message as its chunks assemble it:
// the id and name its chunks gave last, and what of the message's
// arguments its chunks have not yet matched.
type assembling struct {
	index    int
	id, name string
	rest     string
}

// assembles reports whether the chunks that src cites are chunks of the
// open step, uncited, in order, and assemble exactly m: what
// assistantAssembly's full assembly checks, matched against m as the
// chunks come, without building the strings. It uses t.asm as scratch.
func (t *trace) assembles(src []int64, m *session.AssistantMessage) bool {
	content, reasoning := m.Content, m.Reasoning
	calls := t.asm[:0]
	defer func() { clear(calls); t.asm = calls[:0] }() // keep no strings of m
	prev := int64(-1)
	for _, s := range src {
		c, ok := t.chunks[s]
		if !ok || t.cited[s] || s <= prev {
			return false
		}
		prev = s
		if !strings.HasPrefix(content, c.Text) || !strings.HasPrefix(reasoning, c.Reasoning) {
			return false
		}
		content, reasoning = content[len(c.Text):], reasoning[len(c.Reasoning):]
		tc := c.ToolCall
		if tc == nil {
			continue
		}
		k := slices.IndexFunc(calls, func(a assembling) bool { return a.index == tc.Index })
		if k < 0 {
			k = len(calls)
			if k == len(m.ToolCalls) {
				return false // more calls than the message has
			}
			calls = append(calls, assembling{index: tc.Index, rest: m.ToolCalls[k].Arguments})
		}
		a := &calls[k]
		if tc.ID != "" {
			a.id = tc.ID
		}
		if tc.Name != "" {
			a.name = tc.Name
		}
		if !strings.HasPrefix(a.rest, tc.Arguments) {
			return false
		}
		a.rest = a.rest[len(tc.Arguments):]
	}
	if content != "" || reasoning != "" || len(calls) != len(m.ToolCalls) {
		return false
	}
	for k, a := range calls {
		if want := m.ToolCalls[k]; a.id != want.ID || a.name != want.Name || a.rest != "" {
			return false
		}
	}
	return true
}

// loopFeedback reports whether r is a user/message the loop wrote, not a
// person: its output-validation feedback.
func loopFeedback(t *trace, r session.Record) bool {
	um, err := payload[session.UserMessage](&t.dec, r)
	return err == nil && um.Origin == session.OriginOutputValidation
}
