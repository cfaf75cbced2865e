package agentloop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vigil-run/vigil/session"
)

// assembler joins streamed chunks into the assistant message they make:
// text and reasoning concatenated, tool-call fragments joined by index,
// the last usage and finish seen.
type assembler struct {
	text, reasoning strings.Builder
	calls           []indexedCall
	usage           *Usage
	finish          string
}

type indexedCall struct {
	index int
	call  session.ToolCall
}

// content reports whether c carries model output to log as a chunk.
func (c *Chunk) content() bool {
	return c.Text != "" || c.Reasoning != "" || c.ToolCall != nil
}

// add folds c in. A tool call's first fragment without an id gets a
// deterministic one, set on c itself, so that the logged chunk carries
// the id its message will (callers pass a chunk they own).
func (s *assembler) add(c *Chunk, turn, step int) {
	s.text.WriteString(c.Text)
	s.reasoning.WriteString(c.Reasoning)
	if d := c.ToolCall; d != nil {
		i := slices.IndexFunc(s.calls, func(x indexedCall) bool { return x.index == d.Index })
		if i < 0 {
			if d.ID == "" {
				dd := *d
				dd.ID = fmt.Sprintf("call_%d_%d_%d", turn, step, d.Index)
				c.ToolCall, d = &dd, &dd
			}
			s.calls = append(s.calls, indexedCall{index: d.Index})
			i = len(s.calls) - 1
		}
		call := &s.calls[i].call
		if d.ID != "" {
			call.ID = d.ID
		}
		if d.Name != "" {
			call.Name = d.Name
		}
		call.Arguments += d.Arguments
	}
	if c.Usage != nil {
		u := *c.Usage
		s.usage = &u
	}
	if c.Finish != "" {
		s.finish = c.Finish
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
		out = append(out, session.AssistantChunk{ToolCall: &session.ChunkToolCall{Index: tc.Index, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments}})
	}
	return out
}
