package providertest

import (
	"context"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// Collect ranges over s and returns every chunk it yielded and the error
// that ended it, if any.
func Collect(s agentloop.Stream) ([]agentloop.Chunk, error) {
	var out []agentloop.Chunk
	for c, err := range s {
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Run streams req from p to its end: the chunks, and the error that
// ended the stream, whether Stream or the iteration returned it.
func Run(p agentloop.Provider, req *agentloop.Request) ([]agentloop.Chunk, error) {
	s, err := p.Stream(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return Collect(s)
}

// Assembled is the assistant message assembled from chunks the way the agent
// loop assembles it: text and reasoning concatenated, tool-call fragments
// joined by index, and the last usage and finish seen.
type Assembled struct {
	Text, Reasoning string
	ToolCalls       []session.ToolCall
	Usage           *session.Usage
	Finish          string
}

// Assemble folds chunks into an [Assembled] reply. A fragment whose index
// skips ahead leaves empty calls in between, which tests then see.
func Assemble(chunks []agentloop.Chunk) Assembled {
	var a Assembled
	for _, c := range chunks {
		a.Text += c.Text
		a.Reasoning += c.Reasoning
		if tc := c.ToolCall; tc != nil {
			for len(a.ToolCalls) <= tc.Index {
				a.ToolCalls = append(a.ToolCalls, session.ToolCall{})
			}
			call := &a.ToolCalls[tc.Index]
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Name != "" {
				call.Name = tc.Name
			}
			call.Arguments += tc.Arguments
		}
		if c.Usage != nil {
			a.Usage = c.Usage
		}
		if c.Finish != "" {
			a.Finish = c.Finish
		}
	}
	return a
}
