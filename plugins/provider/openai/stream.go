package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/eventstream"
	"github.com/vigil-run/vigil/session"
)

// reasoningFields are the delta fields servers put reasoning text in:
// DeepSeek's reasoning_content, and the reasoning of vLLM, Ollama and
// OpenRouter. Only the first one present is read, since a server in
// transition may send the same text under both names.
var reasoningFields = []string{"reasoning_content", "reasoning"}

// iterate turns the response body into an agentloop.Stream.
func (p *Provider) iterate(ctx context.Context, body io.ReadCloser) agentloop.Stream {
	var d decoder
	events := eventstream.Typed(eventstream.NewReader(body), parseEvent)
	return eventstream.Stream(ctx, providerName, events, eventstream.Decoder[*chunk]{Decode: d.decode, End: d.end}, p.fail)
}

// parseEvent reads one event as the SDK does: data that starts with
// [DONE] ends the stream, an object with an error key is the server's
// error, anything else is a chunk. The event's type is not consulted.
func parseEvent(ev eventstream.Event) (*chunk, bool, bool, error) {
	if len(ev.Data) == 0 {
		return nil, false, false, nil
	}
	if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
		return nil, false, true, nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(ev.Data, &top) == nil {
		if _, ok := top["error"]; ok {
			return nil, false, false, &streamError{data: ev.Data}
		}
	}
	c := new(chunk)
	if err := json.Unmarshal(ev.Data, c); err != nil {
		return nil, false, false, err
	}
	return c, true, false, nil
}

// decoder turns chat completion chunks into agentloop chunks. The zero
// value is ready to use.
type decoder struct {
	byIndex map[int64]int  // server tool-call index → our ordinal
	byID    map[string]int // tool-call id → our ordinal
	calls   []callState    // by ordinal
	last    int            // ordinal of the last fragment, for servers that send no index
	finish  string         // the server's finish_reason
	usage   *session.Usage
}

type callState struct {
	id, name, args bool // whether each has been yielded
}

func (d *decoder) decode(c *chunk) ([]agentloop.Chunk, error) {
	choices, err := c.choices()
	if err != nil {
		return nil, err
	}
	if u, ok, err := c.usage(); err != nil {
		return nil, err
	} else if ok {
		d.usage = &session.Usage{Input: int(u.PromptTokens.Value), Output: int(u.CompletionTokens.Value)}
	}
	var out []agentloop.Chunk
	for _, ch := range choices {
		if ch.Index.Value != 0 {
			continue // only one choice is ever requested
		}
		delta := ch.Delta.V
		if r, err := reasoning(delta); err != nil {
			return nil, err
		} else if r != "" {
			out = append(out, agentloop.Chunk{Reasoning: r})
		}
		if delta.Content != "" {
			out = append(out, agentloop.Chunk{Text: string(delta.Content)})
		}
		if delta.Refusal != "" {
			// A refusal is what the model says instead of an answer; the
			// user should read it like one.
			out = append(out, agentloop.Chunk{Text: string(delta.Refusal)})
		}
		for _, tc := range delta.ToolCalls {
			if td := d.toolCall(tc); td != nil {
				out = append(out, agentloop.Chunk{ToolCall: td})
			}
		}
		if ch.FinishReason != "" {
			d.finish = string(ch.FinishReason)
		}
	}
	return out, nil
}

// usage returns the chunk's usage, if it has one: an object.
func (c *chunk) usage() (usage, bool, error) {
	var u usage
	raw := bytes.TrimSpace(c.Usage)
	if len(raw) == 0 || raw[0] != '{' {
		return u, false, nil
	}
	err := json.Unmarshal(raw, &u)
	return u, err == nil, err
}

// choices returns the chunk's choices; none when the field is absent or
// null. Like the SDK, it takes only an array of objects (or nulls).
func (c *chunk) choices() ([]choice, error) {
	raw := bytes.TrimSpace(c.Choices)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var elems []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		return nil, fmt.Errorf("%w: choices is not an array", ErrMalformedStream)
	}
	var out eventstream.List[choice]
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	if len(out) != len(elems) {
		return nil, fmt.Errorf("%w: choices is not an array", ErrMalformedStream)
	}
	return out, nil
}

func reasoning(delta delta) (string, error) {
	for i, raw := range []json.RawMessage{delta.ReasoningContent, delta.Reasoning} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		name := reasoningFields[i]
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: %s is not a string", ErrMalformedStream, name)
		}
		return s, nil
	}
	return "", nil
}

// toolCall maps one tool-call fragment. ID and name are yielded once per
// call, however often the server repeats them. A fragment that carries
// nothing (some servers open the array with {}) is no call and is
// skipped before it can be numbered.
func (d *decoder) toolCall(tc toolCallDelta) *session.ChunkToolCall {
	if tc.ID == "" && tc.Function.V.Name == "" && tc.Function.V.Arguments == "" {
		return nil
	}
	o := d.ordinal(tc)
	st := &d.calls[o]
	td := &session.ChunkToolCall{Index: o, Arguments: string(tc.Function.V.Arguments)}
	if tc.ID != "" && !st.id {
		td.ID, st.id = string(tc.ID), true
	}
	if tc.Function.V.Name != "" && !st.name {
		td.Name, st.name = string(tc.Function.V.Name), true
	}
	if td.Arguments != "" {
		st.args = true
	}
	if td.ID == "" && td.Name == "" && td.Arguments == "" {
		return nil
	}
	return td
}

// ordinal finds the call a fragment belongs to. Servers number calls by
// index, and the index wins: two calls may share an id (servers that say
// call_0 for each), and the loop makes ids unique. A server that sends no
// index (older Ollama) starts a call with each new id and continues the
// last call otherwise.
func (d *decoder) ordinal(tc toolCallDelta) int {
	if d.byIndex == nil {
		d.byIndex, d.byID = map[int64]int{}, map[string]int{}
	}
	indexed := tc.Index.Set
	o, known := -1, false
	switch {
	case indexed:
		o, known = d.byIndex[tc.Index.Value]
	case tc.ID != "":
		o, known = d.byID[string(tc.ID)]
	case len(d.calls) > 0:
		o, known = d.last, true
	}
	if !known {
		o = len(d.calls)
		d.calls = append(d.calls, callState{})
	}
	if indexed {
		d.byIndex[tc.Index.Value] = o
	}
	if tc.ID != "" {
		d.byID[string(tc.ID)] = o
	}
	d.last = o
	return o
}

// end returns the chunks that close the reply: "{}" for any call that got
// no arguments (a call of a tool without parameters must still carry a
// JSON object), then usage and the finish reason.
func (d *decoder) end() ([]agentloop.Chunk, error) {
	if d.finish == "" {
		return nil, fmt.Errorf("%w: stream ended without a finish reason", ErrMalformedStream)
	}
	var out []agentloop.Chunk
	for i, c := range d.calls {
		if !c.name {
			// Nothing can run a call without a tool's name.
			return nil, fmt.Errorf("%w: tool call %d has no name", ErrMalformedStream, i)
		}
		if !c.args {
			out = append(out, agentloop.Chunk{ToolCall: &session.ChunkToolCall{Index: i, Arguments: "{}"}})
		}
	}
	return append(out, agentloop.Chunk{Usage: d.usage, Finish: finishReason(d.finish, len(d.calls) > 0)}), nil
}

// finishReason maps a finish_reason to the loop's vocabulary. Some
// servers (older Ollama) say "stop" after calling tools; the calls are
// what the loop must act on, so they win.
func finishReason(reason string, calls bool) string {
	switch reason {
	case "tool_calls", "function_call":
		return "tool_calls"
	case "length":
		return "length"
	case "content_filter":
		// The reply was cut off by a filter: incomplete, not finished.
		return "error"
	}
	if calls {
		return "tool_calls"
	}
	return "stop"
}
