package session

import (
	"fmt"
	"slices"
)

// Fold is the incremental projection of a log's surface to messages.
// Records are added in seq order; [Fold.Messages] is always equal to
// [DeriveMessages] over the records added so far. Adding a record that
// appends to the surface costs O(1) amortized; a replace costs O(surface).
//
// A Fold is not safe for concurrent use; the slices it returns are.
type Fold struct {
	// surface is the ordered list of surface records: seqs in surface
	// order are not sorted once a replace has spliced the surface.
	surface []Record
	// msgs is the projection of surface. It only ever grows in place;
	// a replace builds a new slice, so earlier Messages results stay valid.
	msgs []Message
	// bare folds the surface only, without msgs (a validator's, which
	// projects the surface when asked: see surfaceMessages).
	bare bool
}

// NewFold returns an empty fold.
func NewFold() *Fold { return &Fold{} }

// Add folds r into the surface. Non-surface records change nothing. A
// replace whose endpoints are not on the surface in order, or whose
// sources do not cite every shadowed record, fails with ErrInvalidReplace
// and changes nothing.
func (f *Fold) Add(r Record) error {
	ps, pe, err := f.check(r)
	if err != nil {
		return err
	}
	f.apply(r, ps, pe)
	return nil
}

// Messages returns the derived messages. The result is shared and must be
// treated as read-only; it stays valid (unchanged) after later Adds.
func (f *Fold) Messages() []Message { return f.msgs[:len(f.msgs):len(f.msgs)] }

// Surface returns the seqs on the surface, in surface order.
func (f *Fold) Surface() []int64 {
	out := make([]int64, len(f.surface))
	for i, r := range f.surface {
		out[i] = r.seq
	}
	return out
}

// check validates r against the surface without changing it and returns
// the surface positions a replace covers (-1, -1 for anything else).
func (f *Fold) check(r Record) (ps, pe int, err error) {
	if r.op != opReplace {
		return -1, -1, nil
	}
	start, end := r.span()
	ps, pe = f.position(start), f.position(end)
	if ps < 0 || pe < 0 {
		return -1, -1, fmt.Errorf("%w: seq %d: range %d..%d is not on the surface", ErrInvalidReplace, r.seq, start, end)
	}
	if ps > pe {
		return -1, -1, fmt.Errorf("%w: seq %d: range %d..%d is out of surface order", ErrInvalidReplace, r.seq, start, end)
	}
	sources := r.sourceList()
	cited := func(seq int64) bool { return slices.Contains(sources, seq) }
	if len(sources) > 16 {
		// A large compaction: look sources up in a set, not a list.
		set := make(map[int64]struct{}, len(sources))
		for _, s := range sources {
			set[s] = struct{}{}
		}
		cited = func(seq int64) bool { _, ok := set[seq]; return ok }
	}
	for _, s := range f.surface[ps : pe+1] {
		if !cited(s.seq) {
			return -1, -1, fmt.Errorf("%w: seq %d: sources do not cite shadowed seq %d", ErrInvalidReplace, r.seq, s.seq)
		}
	}
	return ps, pe, nil
}

// position returns the surface index of seq, or -1. Replaces are rare,
// so a scan from the end (where compaction ranges usually end) will do.
func (f *Fold) position(seq int64) int {
	for i := len(f.surface) - 1; i >= 0; i-- {
		if f.surface[i].seq == seq {
			return i
		}
	}
	return -1
}

// apply folds a checked record.
func (f *Fold) apply(r Record, ps, pe int) {
	switch r.op {
	case opAppend:
		// Grow by doubling, not by append's 1.25 for large slices, so the
		// amortized cost of an append does not rise with the log's length.
		if len(f.surface) == cap(f.surface) {
			f.surface = slices.Grow(f.surface, len(f.surface)+8)
		}
		f.surface = append(f.surface, r)
		if r.visible && !f.bare {
			if len(f.msgs) == cap(f.msgs) {
				f.msgs = slices.Grow(f.msgs, len(f.msgs)+8)
			}
			f.msgs = append(f.msgs, r.message())
		}
	case opReplace:
		f.surface = slices.Replace(f.surface, ps, pe+1, r)
		if f.bare {
			return
		}
		msgs := make([]Message, 0, len(f.surface))
		for _, s := range f.surface {
			if s.visible {
				msgs = append(msgs, s.message())
			}
		}
		f.msgs = msgs
	}
}

// surfaceMessages projects the surface of a fold: a new list, the
// caller's.
func (f *Fold) surfaceMessages() []Message {
	n := 0
	for _, r := range f.surface {
		if r.visible {
			n++
		}
	}
	msgs := make([]Message, 0, n)
	for _, r := range f.surface {
		if r.visible {
			msgs = append(msgs, r.message())
		}
	}
	return msgs
}

// message returns the record's projection. Its tool calls are copied, so
// that no message a fold hands out aliases record data.
func (r *record) message() Message {
	m, _ := project(r)
	if len(m.ToolCalls) > 0 {
		m.ToolCalls = slices.Clone(m.ToolCalls)
	}
	return m
}

// Project returns the message the surface record r projects to, and
// whether it projects to one (a non-surface record, or an assistant
// message with no content and no tool calls, does not). It is the pure
// per-record projection every fold uses, fresh or live; the message is
// the caller's (its tool calls are a copy). A fold of its own — an
// independent derivation, as the invariants plugin keeps — applies it to
// the records on its surface.
func Project(r Record) (Message, bool) {
	if r.op == opNone || !r.visible {
		return Message{}, false
	}
	return r.message(), true
}

// project is the one pure projection of a surface record to a message:
//
//   - user/message → role "user", content.
//   - assistant/message → role "assistant", content, reasoning and tool
//     calls; nothing when it has neither content nor tool calls.
//   - tool/result → role "tool", tool_call_id and name of the call, and as
//     content the result's content; an error result with no content shows
//     the model "error <code>: <message>" (or "error <code>").
//   - tool/reconcile → role "user", content [ReconcileMessage]: appended
//     where it was logged, never rewriting the unknown result it settles.
func project(r *record) (Message, bool) {
	switch p := r.pay().(type) {
	case UserMessage:
		return Message{Role: RoleUser, Content: p.Content}, true
	case AssistantMessage:
		if p.Content == "" && len(p.ToolCalls) == 0 {
			return Message{}, false
		}
		// The tool calls are the payload's: callers copy them (message)
		// or only read them.
		return Message{Role: RoleAssistant, Content: p.Content, Reasoning: p.Reasoning, ToolCalls: p.ToolCalls}, true
	case ToolResult:
		m := Message{Role: RoleTool, Content: p.Content, ToolCallID: p.ID, Name: p.Name}
		if e := p.Error; e != nil && m.Content == "" {
			m.Content = "error " + e.Code
			if e.Message != "" {
				m.Content += ": " + e.Message
			}
		}
		return m, true
	case ToolReconcile:
		return Message{Role: RoleUser, Content: ReconcileMessage(p)}, true
	}
	return Message{}, false
}

// DeriveMessages is the fold of records (in seq order) from scratch: the
// messages a model is shown for that log. It is pure: it shares nothing
// with any session but the immutable records. An invalid replace is an
// ErrInvalidReplace error.
func DeriveMessages(records []Record) ([]Message, error) {
	// Most logs never replace: then the surface is every surface record in
	// order and the fold is a copy of their projections.
	msgs := make([]Message, 0, visible(records))
	for i, r := range records {
		switch r.op {
		case opAppend:
			if r.visible {
				msgs = append(msgs, r.message())
			}
		case opReplace:
			return deriveWithReplaces(records, i)
		}
	}
	return msgs, nil
}

// visible counts the records that project to a message: the length of
// the fold of a log without replaces, and a fair capacity for any other.
func visible(records []Record) int {
	n := 0
	for _, r := range records {
		if r.visible {
			n++
		}
	}
	return n
}

// deriveWithReplaces is the general fold, for logs whose record i is the
// first replace.
func deriveWithReplaces(records []Record, i int) ([]Message, error) {
	f := Fold{surface: make([]Record, 0, i+len(records)/4)}
	f.msgs = make([]Message, 0, cap(f.surface))
	for _, r := range records {
		if err := f.Add(r); err != nil {
			return nil, err
		}
	}
	return f.Messages(), nil
}

// DeriveRequest returns what a request built at the record before (a
// step/start) must carry: the fold of the records before it, and the
// latest request/header of all records (a header logged after the
// step/start belongs to the step's request), with whether there was one.
// It is [DeriveMessages] and [DeriveHeader] in one pass.
func DeriveRequest(records []Record, before int) ([]Message, Header, bool, error) {
	if before < 0 || before > len(records) {
		return nil, Header{}, false, fmt.Errorf("session: derive request before %d of %d records", before, len(records))
	}
	msgs := make([]Message, 0, visible(records[:before]))
	h, ok, err := deriveRequestFunc(records, before, func(i int, m *Message) bool {
		c := *m
		if len(c.ToolCalls) > 0 {
			c.ToolCalls = slices.Clone(c.ToolCalls)
		}
		// After a replace the fold starts over from message 0.
		msgs = append(msgs[:i], c)
		return true
	})
	if err != nil {
		return nil, Header{}, false, err
	}
	return msgs, h, ok, nil
}

// MatchRequest reports whether msgs equal the fold of records[:before],
// message by message, and returns the request header as [DeriveRequest]
// does. For a log without replaces it allocates nothing, and it hands out
// nothing of the records: the comparison happens here.
func MatchRequest(records []Record, before int, msgs Messages) (equal bool, h Header, ok bool, err error) {
	count := 0
	equal = true
	h, ok, err = deriveRequestFunc(records, before, func(i int, m *Message) bool {
		count = i + 1
		equal = msgs.EqualAt(i, m)
		return equal
	})
	if err != nil {
		return false, Header{}, false, err
	}
	return equal && count == msgs.Len(), h, ok, nil
}

// deriveRequestFunc is [DeriveRequest] without building the message list:
// it calls fn with each message of the fold of records[:before], in order,
// until fn returns false. For a log without replaces the messages are the
// records' own projections, handed out as they are met, so a comparison
// against the fold costs no allocation; they must not be modified or kept
// (which is why it is not exported). A log with replaces is folded first,
// and fn may then see messages from index 0 again: it must judge each
// (i, m) on its own.
func deriveRequestFunc(records []Record, before int, fn func(i int, m *Message) bool) (Header, bool, error) {
	if before < 0 || before > len(records) {
		return Header{}, false, fmt.Errorf("session: derive request before %d of %d records", before, len(records))
	}
	h, ok := DeriveHeader(records[before:])
	last, n, stopped := -1, 0, false
	for i, r := range records[:before] {
		switch r.op {
		case opNone:
			if !ok && r.typ == TypeRequestHeader {
				last = i
			}
		case opAppend:
			if r.visible && !stopped {
				m, _ := project(r.record)
				stopped = !fn(n, &m)
				n++
			}
		case opReplace:
			// The surface was spliced: what fn saw may not be the fold.
			msgs, err := deriveWithReplaces(records[:before], i)
			if err != nil {
				return Header{}, false, err
			}
			for k := range msgs {
				if !fn(k, &msgs[k]) {
					break
				}
			}
			if !ok {
				h, ok = DeriveHeader(records[:before])
			}
			return h, ok, nil
		}
	}
	if !ok && last >= 0 {
		h, ok = DeriveHeader(records[last : last+1])
	}
	return h, ok, nil
}

// DeriveHeader returns the request header of the latest request/header
// record, normalized so that empty system, tools and stop are absent, and
// whether there was one.
func DeriveHeader(records []Record) (Header, bool) {
	for i := len(records) - 1; i >= 0; i-- {
		// The type first: a loaded record that dropped its payload (see
		// lean) would be decoded again only to be passed over.
		if records[i].Type() != TypeRequestHeader {
			continue
		}
		if p, ok := records[i].pay().(RequestHeader); ok {
			return normalizeHeader(CloneHeader(p.Header)), true
		}
	}
	return Header{}, false
}

func normalizeHeader(h Header) Header {
	if len(h.Tools) == 0 {
		h.Tools = nil
	}
	if len(h.Stop) == 0 {
		h.Stop = nil
	}
	if isEmptyJSON(h.OutputSchema) {
		h.OutputSchema = nil
	}
	return h
}
