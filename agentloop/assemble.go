package agentloop

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// assembler joins streamed chunks into the assistant message they make:
// text and reasoning concatenated, tool-call fragments joined by index,
// the last usage and finish seen. The call ids it logs are unique in the
// session (see [callIDs.assign]).
type assembler struct {
	ids             *callIDs // the ids the session's log uses (nil: none)
	text, reasoning strings.Builder
	calls           []indexedCall
	usage           *session.Usage
	finish          string
}

type indexedCall struct {
	index int
	call  session.ToolCall // its Arguments are set by message, from args
	// args are the arguments' fragments joined: appended to, so that
	// joining them takes time in proportion to their size.
	args []byte
}

// content reports whether c carries model output to log as a chunk.
func (c *Chunk) content() bool {
	return c.Text != "" || c.Reasoning != "" || c.ToolCall != nil
}

// add folds c in. A call's id is decided by its first fragment: the
// provider's id when the session has not used it yet, else one made
// unique ([callIDs.assign]). A fragment whose id differs from its call's
// (the first one, renamed, or a later one repeating the provider's id) is
// given the call's id on c itself, so that the logged chunks assemble to
// the logged message (callers pass a chunk they own). So is its text made
// as its records will hold it (session.ValidString): a provider may cut a
// character between chunks or send bytes that are not UTF-8, and the
// message must be its logged chunks joined.
func (s *assembler) add(c *Chunk, turn, step int) {
	heldText(c)
	s.text.WriteString(c.Text)
	s.reasoning.WriteString(c.Reasoning)
	if d := c.ToolCall; d != nil {
		i := slices.IndexFunc(s.calls, func(x indexedCall) bool { return x.index == d.Index })
		first := i < 0
		if first {
			if s.ids == nil {
				s.ids = &callIDs{}
			}
			s.calls = append(s.calls, indexedCall{index: d.Index, call: session.ToolCall{ID: s.ids.assign(d.ID, turn, step, d.Index)}})
			i = len(s.calls) - 1
		}
		ic := &s.calls[i]
		if d.ID != ic.call.ID && (first || d.ID != "") {
			dd := *d
			dd.ID = ic.call.ID
			c.ToolCall, d = &dd, &dd
		}
		if d.Name != "" {
			ic.call.Name = d.Name
		}
		ic.args = append(ic.args, d.Arguments...)
	}
	if c.Usage != nil {
		u := *c.Usage
		s.usage = &u
	}
	if c.Finish != "" {
		s.finish = c.Finish
	}
}

// heldText makes the text of the chunk c owns valid UTF-8, as its
// records hold it; a tool-call fragment it changes is copied first.
func heldText(c *Chunk) {
	c.Text, c.Reasoning = session.ValidString(c.Text), session.ValidString(c.Reasoning)
	if d := c.ToolCall; d != nil {
		id, name, args := session.ValidString(d.ID), session.ValidString(d.Name), session.ValidString(d.Arguments)
		if id != d.ID || name != d.Name || args != d.Arguments {
			dd := *d
			dd.ID, dd.Name, dd.Arguments = id, name, args
			c.ToolCall = &dd
		}
	}
}

// message returns the assembled message; tool calls are in the order
// their first fragments arrived.
func (s *assembler) message() session.AssistantMessage {
	m := session.AssistantMessage{Content: s.text.String(), Reasoning: s.reasoning.String()}
	if len(s.calls) > 0 {
		m.ToolCalls = make([]session.ToolCall, len(s.calls))
		for i, c := range s.calls {
			m.ToolCalls[i] = c.call
			m.ToolCalls[i].Arguments = string(c.args)
		}
	}
	return m
}

// chunkData converts a chunk to its assistant/chunk payloads: one per
// kind of content it carries (an assistant/chunk holds exactly one), in
// the order reasoning, text, tool call.
func chunkData(c *Chunk) []session.AssistantChunk {
	var out []session.AssistantChunk
	if c.Reasoning != "" {
		out = append(out, session.AssistantChunk{Reasoning: c.Reasoning})
	}
	if c.Text != "" {
		out = append(out, session.AssistantChunk{Text: c.Text})
	}
	if tc := c.ToolCall; tc != nil {
		tc := *tc // the record's own copy
		out = append(out, session.AssistantChunk{ToolCall: &tc})
	}
	return out
}

// callIDs is the set of tool-call ids a session's log uses — on chunks,
// assistant messages, tool calls and results — kept up to date with the
// log incrementally. It is a pure function of the log (plus the ids
// assigned in the step being assembled), which is what makes the ids the
// loop assigns reproducible: a replay that re-serves the logged chunks
// serves ids that were unused at that point, and keeps them.
type callIDs struct {
	// last is the last record read, so that a different log (a session
	// reopened under the same id) is noticed; it pins one record only.
	last session.Record
	n    int
	ids  map[string]struct{}

	scratch []session.Record // sync's, kept for its capacity
}

// sync reads the records of sess appended since the last sync.
func (c *callIDs) sync(sess *live.Session) {
	recs, ok := since(c.scratch[:0], sess, c.n, c.last, math.MaxInt64)
	if !ok {
		*c = callIDs{}
		recs, _ = since(recs[:0], sess, 0, session.Record{}, math.MaxInt64)
	}
	defer func() { c.scratch = keepScratch(recs) }()
	if c.ids == nil {
		c.ids = make(map[string]struct{})
	}
	for _, r := range recs {
		c.record(r)
		c.n, c.last = c.n+1, r
	}
}

func (c *callIDs) record(r session.Record) {
	switch r.Type() {
	case session.TypeAssistantChunk:
		if d, err := session.DecodeData[session.AssistantChunk](r); err == nil && d.ToolCall != nil && d.ToolCall.ID != "" {
			c.ids[d.ToolCall.ID] = struct{}{}
		}
	case session.TypeAssistantMessage:
		if m, err := session.DecodeData[session.AssistantMessage](r); err == nil {
			for _, tc := range m.ToolCalls {
				c.ids[tc.ID] = struct{}{}
			}
		}
	case session.TypeToolCall:
		if tc, err := session.DecodeData[session.ToolCall](r); err == nil {
			c.ids[tc.ID] = struct{}{}
		}
	case session.TypeToolResult:
		if res, err := session.DecodeData[session.ToolResult](r); err == nil {
			c.ids[res.ID] = struct{}{}
		}
	}
}

// assign returns the id to log for the call at index of turn and step
// whose provider id is id, and marks it used. That is id itself when it
// is new to the session; otherwise (a provider that numbers its calls
// call_0 in every response, or none at all) it is id_<turn>_<step>_<index>,
// or call_<turn>_<step>_<index> for a missing id, with _2, _3, … appended
// in the unlikely case that is taken too. The result keeps to
// [A-Za-z0-9_-] when id does, which every provider accepts.
func (c *callIDs) assign(id string, turn, step, index int) string {
	if c.ids == nil {
		c.ids = make(map[string]struct{})
	}
	out := id
	if _, used := c.ids[out]; used || out == "" {
		base := id
		if base == "" {
			base = "call"
		}
		base = fmt.Sprintf("%s_%d_%d_%d", base, turn, step, index)
		out = base
		for k := 2; ; k++ {
			if _, used := c.ids[out]; !used {
				break
			}
			out = fmt.Sprintf("%s_%d", base, k)
		}
	}
	c.ids[out] = struct{}{}
	return out
}
