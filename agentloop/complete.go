package agentloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Reply is a whole model reply collected from a stream.
type Reply struct {
	Content   string
	Reasoning string
	ToolCalls []session.ToolCall
	Usage     *Usage
	Finish    string
}

// Complete sends a one-shot request — a summary, a title: anything that is
// not a step of a turn — through llm/stream, with p as the innermost
// fallback, and collects the reply. The request is not marked loop-built,
// so the request invariants do not apply to it, and nothing is logged.
// A request the loop built is refused: it belongs to its step.
func Complete(ctx context.Context, c *bus.Context, p Provider, req *Request) (Reply, error) {
	if req.loopBuilt {
		return Reply{}, errors.New("agentloop: Complete: the request was built by the loop")
	}
	s, err := LLMStream.Run(ctx, c, req, func(ctx context.Context, r *Request) (Stream, error) {
		return p.Stream(ctx, r)
	})
	if err != nil {
		return Reply{}, fmt.Errorf("agentloop: one-shot request: %w", err)
	}
	if s == nil {
		return Reply{}, errors.New("agentloop: one-shot request: no stream")
	}
	var asm assembler
	for ch, err := range s {
		if err != nil {
			return Reply{}, fmt.Errorf("agentloop: one-shot request: %w", err)
		}
		asm.add(&ch, req.Turn, req.Step)
	}
	m := asm.message()
	return Reply{Content: m.Content, Reasoning: m.Reasoning, ToolCalls: m.ToolCalls, Usage: asm.usage, Finish: asm.finish}, nil
}
