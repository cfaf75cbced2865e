package otel

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-run/vigil/session"
)

// Vigil's own attributes, linking a span to the log it was built from.
const (
	// AttrSeqFirst and AttrSeqLast are the seqs of the span's first and
	// last event in the session's log.
	AttrSeqFirst = attribute.Key("vigil.session.seq.first")
	AttrSeqLast  = attribute.Key("vigil.session.seq.last")
	// AttrDigest is the request/digest of a chat span's request.
	AttrDigest = attribute.Key("vigil.request.digest")
	// AttrTurn and AttrStep number the span's turn and step in the log.
	AttrTurn = attribute.Key("vigil.turn")
	AttrStep = attribute.Key("vigil.step")
	// AttrTurnReason is turn/end's reason on an invoke_agent span.
	AttrTurnReason = attribute.Key("vigil.turn.reason")
	// AttrContinues is set on the span of a turn that carries on an
	// interrupted one: the interrupted turn's number.
	AttrContinues = attribute.Key("vigil.turn.continues")
)

// Span is one span of a session's traces, as the log describes it: every
// field is derived from the records, so building it twice from the same
// log gives the same span.
type Span struct {
	Name    string
	Kind    trace.SpanKind
	TraceID trace.TraceID
	SpanID  trace.SpanID
	// Parent is the span's parent in its trace; zero for a turn's span,
	// the root of the turn's trace.
	Parent trace.SpanID
	// Start and End are the times of the events that open and close it.
	Start, End time.Time
	Attributes []attribute.KeyValue
	// Status is codes.Error when the log records a failure, with
	// Description saying which; else codes.Unset.
	Status      codes.Code
	Description string
	// First and Last are the seqs of its first and last event.
	First, Last int64

	// What the metrics of a chat span need, without reading attributes.
	model, provider, errType string
	usage                    *session.Usage
}

// Options are the choices of [Spans] that change what spans carry.
type Options struct {
	// Content adds message content to the spans (gen_ai.input.messages,
	// gen_ai.output.messages, gen_ai.system_instructions, tool arguments
	// and results). Off by default: logs hold what users typed.
	Content bool
}

// Spans returns the spans of the turns of a session's log, id being the
// session's id: each span in the order the event closing it comes in the
// log (a turn's tool and chat spans before the turn's). A turn still open
// at the end of records has no spans yet; a fork's inherited turns are
// its parent's, and are left out. The live plugin feeds committed records
// one at a time through the same fold, so what it sends and what
// `vigil trace` rebuilds are the same spans.
func Spans(id string, records []session.Record, opts Options) []Span {
	b := newBuilder(id, opts)
	var out []Span
	for _, r := range records {
		if r.Type() == session.TypeEndSeed {
			out = out[:0]
		}
		out = append(out, b.add(r)...)
	}
	return out
}

// builder is the fold of a log into spans: add takes the next record and
// returns the spans it closes. It is pure: its state is what the records
// before said.
type builder struct {
	id   string
	opts Options

	header  session.Header
	turn    *openTurn
	step    *openStep
	calls   map[string]*openCall
	records []session.Record // the log so far, kept only for content
	next    int64            // seq the next record must have
	// quiet leaves content out of the spans add returns, for a fold whose
	// spans are discarded (the live plugin catching up with a log): the
	// state is the same, and deriving each step's messages is not free.
	quiet bool
}

type openTurn struct {
	seq       int64
	time      time.Time
	num       int
	continues int
	traceID   trace.TraceID
	spanID    trace.SpanID
	usage     session.Usage
	counted   bool
}

type openStep struct {
	seq      int64
	time     time.Time
	num      int
	digest   string
	msg      *session.AssistantMessage
	msgSeq   int64
	msgTime  time.Time
	inputEnd int // with content: the request's messages are the fold of records[:inputEnd]
}

type openCall struct {
	seq  int64
	time time.Time
	step int
	call session.ToolCall
}

func newBuilder(id string, opts Options) *builder {
	return &builder{id: id, opts: opts, calls: map[string]*openCall{}}
}

// add folds r into the open turn, step and calls, and returns the span
// it ends, if any.
func (b *builder) add(r session.Record) []Span {
	b.next = r.Seq() + 1
	if b.opts.Content {
		b.records = append(b.records, r)
	}
	switch r.Type() {
	case session.TypeTurnStart, session.TypeStepStart:
		b.begin(r)
	case session.TypeRequestHeader, session.TypeRequestDigest, session.TypeAssistantMessage, session.TypeToolCall:
		b.note(r)
	case session.TypeToolResult, session.TypeStepEnd, session.TypeTurnEnd:
		if s, ok := b.end(r); ok {
			return []Span{s}
		}
	}
	return nil
}

// begin opens the turn or the step r starts; a step outside a turn is
// not one.
func (b *builder) begin(r session.Record) {
	switch r.Type() {
	case session.TypeTurnStart:
		ts, _ := session.DecodeData[session.TurnStart](r)
		b.turn = &openTurn{seq: r.Seq(), time: r.Time(), num: r.Turn(), continues: ts.Continues,
			traceID: traceID(b.id, r.Seq()), spanID: spanID(b.id, r.Seq())}
		b.step = nil
		clear(b.calls)
	case session.TypeStepStart:
		if b.turn == nil {
			return
		}
		b.step = &openStep{seq: r.Seq(), time: r.Time(), num: r.Step()}
		if b.opts.Content {
			// The request's messages are the fold of the log before
			// step/start (the rule the invariants check).
			b.step.inputEnd = len(b.records) - 1
		}
	}
}

// note keeps what a span will carry: the request's header, the open
// step's digest and reply, the open turn's calls.
func (b *builder) note(r session.Record) {
	switch r.Type() {
	case session.TypeRequestHeader:
		if h, err := session.DecodeData[session.RequestHeader](r); err == nil {
			b.header = h.Header
		}
	case session.TypeRequestDigest:
		if b.step != nil {
			if d, err := session.DecodeData[session.Digest](r); err == nil {
				b.step.digest = d.SHA256
			}
		}
	case session.TypeAssistantMessage:
		if b.step != nil {
			if m, err := session.DecodeData[session.AssistantMessage](r); err == nil {
				b.step.msg, b.step.msgSeq, b.step.msgTime = &m, r.Seq(), r.Time()
			}
		}
	case session.TypeToolCall:
		if b.turn == nil {
			return
		}
		if c, err := session.DecodeData[session.ToolCall](r); err == nil {
			b.calls[c.ID] = &openCall{seq: r.Seq(), time: r.Time(), step: r.Step(), call: c}
		}
	}
}

// end closes the call, the step or the turn r ends and returns its span;
// false when r ends none that is open.
func (b *builder) end(r session.Record) (Span, bool) {
	switch r.Type() {
	case session.TypeToolResult:
		res, err := session.DecodeData[session.ToolResult](r)
		if err != nil {
			return Span{}, false
		}
		c, ok := b.calls[res.ID]
		if !ok || b.turn == nil {
			return Span{}, false
		}
		delete(b.calls, res.ID)
		return b.toolSpan(c, r, res), true
	case session.TypeStepEnd:
		if b.step == nil || b.turn == nil {
			return Span{}, false
		}
		end, _ := session.DecodeData[session.StepEnd](r)
		s := b.chatSpan(r, end)
		b.step = nil
		return s, true
	case session.TypeTurnEnd:
		if b.turn == nil {
			return Span{}, false
		}
		end, _ := session.DecodeData[session.TurnEnd](r)
		s := b.turnSpan(r, end)
		b.turn, b.step = nil, nil
		clear(b.calls)
		return s, true
	}
	return Span{}, false
}

func (b *builder) common(first, last int64) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIConversationID(b.id),
		AttrSeqFirst.Int64(first),
		AttrSeqLast.Int64(last),
	}
}

func (b *builder) turnSpan(r session.Record, end session.TurnEnd) Span {
	t := b.turn
	attrs := append(b.common(t.seq, r.Seq()),
		semconv.GenAIOperationNameInvokeAgent,
		AttrTurn.Int(t.num),
		AttrTurnReason.String(end.Reason),
	)
	attrs = appendModel(attrs, b.header)
	if t.counted {
		attrs = append(attrs, semconv.GenAIUsageInputTokens(t.usage.Input), semconv.GenAIUsageOutputTokens(t.usage.Output))
	}
	if t.continues > 0 {
		attrs = append(attrs, AttrContinues.Int(t.continues))
	}
	s := Span{Name: semconv.GenAIOperationNameInvokeAgent.Value.AsString(), Kind: trace.SpanKindInternal,
		TraceID: t.traceID, SpanID: t.spanID, Start: t.time, End: r.Time(), Attributes: attrs,
		First: t.seq, Last: r.Seq(), model: b.header.Model, provider: b.header.Provider}
	// A turn that did not complete failed from its caller's point of
	// view: the reason (and the error, when there is one) says why.
	if end.Reason != session.ReasonCompleted {
		s.Status, s.Description = codes.Error, end.Reason
		if end.Error != "" {
			s.Description += ": " + end.Error
		}
		s.errType = end.Reason
		s.Attributes = append(s.Attributes, semconv.ErrorTypeKey.String(end.Reason))
	}
	return s
}

func (b *builder) chatSpan(r session.Record, end session.StepEnd) Span {
	st, t := b.step, b.turn
	h := b.header
	// The model call ends with its reply; the tools the reply asked for
	// run after it, as siblings under the turn.
	last, endTime := r.Seq(), r.Time()
	if st.msg != nil {
		last, endTime = st.msgSeq, st.msgTime
	}
	attrs := append(b.common(st.seq, last),
		semconv.GenAIOperationNameChat,
		AttrTurn.Int(t.num),
		AttrStep.Int(st.num),
	)
	attrs = appendModel(attrs, h)
	if h.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(h.MaxTokens))
	}
	if h.Temperature != nil {
		attrs = append(attrs, semconv.GenAIRequestTemperature(*h.Temperature))
	}
	if end.Finish != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(end.Finish))
	}
	if end.Usage != nil {
		attrs = append(attrs, semconv.GenAIUsageInputTokens(end.Usage.Input), semconv.GenAIUsageOutputTokens(end.Usage.Output))
		t.usage.Input += end.Usage.Input
		t.usage.Output += end.Usage.Output
		t.counted = true
	}
	if st.digest != "" {
		attrs = append(attrs, AttrDigest.String(st.digest))
	}
	if b.opts.Content && !b.quiet {
		input, _ := session.DeriveMessages(b.records[:st.inputEnd])
		if h.System != "" {
			attrs = append(attrs, semconv.GenAISystemInstructionsKey.String(jsonText([]part{{Type: "text", Content: h.System}})))
		}
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(jsonText(inputMessages(input))))
		if st.msg != nil {
			attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(jsonText([]message{outputMessage(st.msg, end.Finish)})))
		}
	}
	name := semconv.GenAIOperationNameChat.Value.AsString()
	if h.Model != "" {
		name += " " + h.Model
	}
	s := Span{Name: name, Kind: trace.SpanKindClient, TraceID: t.traceID, SpanID: spanID(b.id, st.seq), Parent: t.spanID,
		Start: st.time, End: endTime, Attributes: attrs, First: st.seq, Last: last,
		model: h.Model, provider: h.Provider, usage: end.Usage}
	if end.Finish == session.FinishError {
		s.Status, s.Description, s.errType = codes.Error, "the step failed", session.FinishError
		s.Attributes = append(s.Attributes, semconv.ErrorTypeKey.String(session.FinishError))
	}
	return s
}

func (b *builder) toolSpan(c *openCall, r session.Record, res session.ToolResult) Span {
	t := b.turn
	attrs := append(b.common(c.seq, r.Seq()),
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(c.call.Name),
		semconv.GenAIToolCallID(c.call.ID),
		semconv.GenAIToolType("function"),
		AttrTurn.Int(t.num),
		AttrStep.Int(c.step),
	)
	if b.opts.Content && !b.quiet {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(c.call.Arguments), semconv.GenAIToolCallResultKey.String(res.Content))
	}
	s := Span{Name: semconv.GenAIOperationNameExecuteTool.Value.AsString() + " " + c.call.Name, Kind: trace.SpanKindInternal,
		TraceID: t.traceID, SpanID: spanID(b.id, c.seq), Parent: t.spanID,
		Start: c.time, End: r.Time(), Attributes: attrs, First: c.seq, Last: r.Seq()}
	if res.Error != nil {
		s.Status, s.Description, s.errType = codes.Error, res.Error.Code, res.Error.Code
		if res.Error.Message != "" {
			s.Description += ": " + res.Error.Message
		}
		s.Attributes = append(s.Attributes, semconv.ErrorTypeKey.String(res.Error.Code))
	}
	return s
}

// appendModel adds the provider and model of the header in force.
func appendModel(attrs []attribute.KeyValue, h session.Header) []attribute.KeyValue {
	if h.Provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(h.Provider))
	}
	if h.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(h.Model))
	}
	return attrs
}

// traceID is the id of the trace of the turn whose turn/start is at seq
// in session id's log: a turn traced live and rebuilt later is one trace.
func traceID(id string, seq int64) trace.TraceID {
	var t trace.TraceID
	sum := derive("trace", id, seq)
	copy(t[:], sum[:])
	if !t.IsValid() { // an all-zero id is invalid; no hash is likely to be one
		t[15] = 1
	}
	return t
}

// spanID is the id of the span whose first event is at seq.
func spanID(id string, seq int64) trace.SpanID {
	var s trace.SpanID
	sum := derive("span", id, seq)
	copy(s[:], sum[:])
	if !s.IsValid() {
		s[7] = 1
	}
	return s
}

func derive(kind, id string, seq int64) [sha256.Size]byte {
	buf := make([]byte, 0, 64)
	buf = append(buf, "vigil "...)
	buf = append(buf, kind...)
	buf = append(buf, 0)
	buf = append(buf, id...)
	buf = append(buf, 0)
	buf = binary.BigEndian.AppendUint64(buf, uint64(seq))
	return sha256.Sum256(buf)
}

// The GenAI semantic conventions' message shapes (gen_ai.input.messages,
// gen_ai.output.messages), as JSON.
type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

func inputMessages(ms []session.Message) []message {
	out := make([]message, 0, len(ms))
	for _, m := range ms {
		switch m.Role {
		case session.RoleTool:
			out = append(out, message{Role: m.Role, Parts: []part{{Type: "tool_call_response", ID: m.ToolCallID, Response: m.Content}}})
		case session.RoleAssistant:
			out = append(out, assistantMessage(m.Content, m.Reasoning, m.ToolCalls, ""))
		default:
			out = append(out, message{Role: m.Role, Parts: []part{{Type: "text", Content: m.Content}}})
		}
	}
	return out
}

func outputMessage(m *session.AssistantMessage, finish string) message {
	return assistantMessage(m.Content, m.Reasoning, m.ToolCalls, finish)
}

func assistantMessage(content, reasoning string, calls []session.ToolCall, finish string) message {
	msg := message{Role: session.RoleAssistant, Parts: []part{}, FinishReason: finish}
	if reasoning != "" {
		msg.Parts = append(msg.Parts, part{Type: "reasoning", Content: reasoning})
	}
	if content != "" {
		msg.Parts = append(msg.Parts, part{Type: "text", Content: content})
	}
	for _, c := range calls {
		p := part{Type: "tool_call", ID: c.ID, Name: c.Name}
		if json.Valid([]byte(c.Arguments)) {
			p.Arguments = json.RawMessage(c.Arguments)
		} else {
			p.Arguments, _ = json.Marshal(c.Arguments)
		}
		msg.Parts = append(msg.Parts, p)
	}
	return msg
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen: the shapes above always marshal
		return strconv.Quote(err.Error())
	}
	return string(b)
}
