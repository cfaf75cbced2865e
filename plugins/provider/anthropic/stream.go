package anthropic

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

// iterate turns the response body into an agentloop.Stream.
func (p *Provider) iterate(ctx context.Context, body io.ReadCloser) agentloop.Stream {
	var d decoder
	end := func() ([]agentloop.Chunk, error) {
		final, err := d.end()
		if err != nil {
			return nil, err
		}
		return []agentloop.Chunk{final}, nil
	}
	events := eventstream.Typed(eventstream.NewReader(body), parseEvent)
	return eventstream.Stream(ctx, providerName, events, eventstream.Decoder[*event]{Decode: d.decode, End: end}, p.fail)
}

// parseEvent reads one event as the SDK does: by its SSE event name,
// ping and unnamed events are skipped, an error event is the server's
// error, and any other event with data is decoded (its type is then the
// one its data says).
func parseEvent(ev eventstream.Event) (*event, bool, bool, error) {
	data := bytes.TrimSuffix(ev.Data, []byte("\n"))
	switch {
	case ev.Type == "ping", ev.Type == "":
		return nil, false, false, nil
	case ev.Type == "error":
		return nil, false, false, newStreamError(data)
	case len(data) == 0:
		return nil, false, false, nil
	}
	// Data that is JSON but no object is an event of no known type, as
	// the SDK reads it.
	var e eventstream.Object[event]
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return nil, false, false, err
	}
	return &e.V, true, false, nil
}

// block is what the decoder knows of a content block of the reply.
type block struct {
	kind string // "text", "thinking", "tool_use", or another type, ignored
	call int    // the tool call's ordinal, for tool_use
	args bool   // whether argument text was yielded, for tool_use
}

// decoder turns Messages API stream events into agentloop chunks. The
// zero value is ready to use.
type decoder struct {
	started bool
	blocks  map[int64]*block
	calls   int // tool_use blocks so far
	input   int // input tokens, cache reads and writes included
	output  int
	stop    string // the API's stop_reason
	stopped bool   // message_stop seen
}

func (d *decoder) decode(ev *event) ([]agentloop.Chunk, error) {
	typ := string(ev.Type)
	switch typ {
	case "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
	default:
		// The API adds event types over time and documents that clients
		// should skip the ones they do not know.
		return nil, nil
	}
	if typ != "message_start" && !d.started {
		return nil, fmt.Errorf("%w: %s before message_start", ErrMalformedStream, typ)
	}
	if d.stopped {
		return nil, fmt.Errorf("%w: %s after message_stop", ErrMalformedStream, typ)
	}
	switch typ {
	case "message_start":
		if d.started {
			return nil, fmt.Errorf("%w: second message_start", ErrMalformedStream)
		}
		d.started = true
		d.blocks = map[int64]*block{}
		u := ev.Message.V.Usage.V
		d.input = int(u.InputTokens.Value + u.CacheCreationInputTokens.Value + u.CacheReadInputTokens.Value)
		d.output = int(u.OutputTokens.Value)
	case "content_block_start":
		return d.start(ev)
	case "content_block_delta":
		return d.delta(ev)
	case "content_block_stop":
		b, ok := d.blocks[ev.Index.Value]
		if !ok {
			return nil, fmt.Errorf("%w: content_block_stop for unknown block %d", ErrMalformedStream, ev.Index.Value)
		}
		if b.kind == "tool_use" && !b.args {
			// A call of a tool without parameters still carries a JSON
			// object, so the loop can parse it.
			b.args = true
			return []agentloop.Chunk{{ToolCall: &session.ChunkToolCall{Index: b.call, Arguments: "{}"}}}, nil
		}
	case "message_delta":
		if r := ev.Delta.V.StopReason; r != "" {
			d.stop = string(r)
		}
		// Usage here is cumulative. Input counts arrive here too on
		// newer API versions (and on servers that only count at the end).
		u := ev.Usage.V
		if u.OutputTokens.Set {
			d.output = int(u.OutputTokens.Value)
		}
		if u.InputTokens.Set && u.InputTokens.Value > 0 {
			d.input = int(u.InputTokens.Value + u.CacheCreationInputTokens.Value + u.CacheReadInputTokens.Value)
		}
	case "message_stop":
		d.stopped = true
	}
	return nil, nil
}

func (d *decoder) start(ev *event) ([]agentloop.Chunk, error) {
	if _, dup := d.blocks[ev.Index.Value]; dup {
		return nil, fmt.Errorf("%w: content block %d started twice", ErrMalformedStream, ev.Index.Value)
	}
	cb := ev.ContentBlock.V
	b := &block{kind: string(cb.Type)}
	d.blocks[ev.Index.Value] = b
	switch cb.Type {
	case "text":
		if cb.Text != "" {
			return []agentloop.Chunk{{Text: string(cb.Text)}}, nil
		}
	case "thinking":
		if cb.Thinking != "" {
			return []agentloop.Chunk{{Reasoning: string(cb.Thinking)}}, nil
		}
	case "tool_use":
		if cb.Name == "" {
			// Nothing can run a call without a tool's name.
			return nil, fmt.Errorf("%w: tool_use block %d has no name", ErrMalformedStream, ev.Index.Value)
		}
		b.call = d.calls
		d.calls++
		td := &session.ChunkToolCall{Index: b.call, ID: string(cb.ID), Name: string(cb.Name)}
		// The API starts every call with an empty input and streams it;
		// a server that sends the whole input up front is taken at its
		// word.
		if raw := string(cb.Input); raw != "" && raw != "{}" && raw != "null" {
			td.Arguments, b.args = raw, true
		}
		return []agentloop.Chunk{{ToolCall: td}}, nil
	}
	return nil, nil
}

func (d *decoder) delta(ev *event) ([]agentloop.Chunk, error) {
	b, ok := d.blocks[ev.Index.Value]
	if !ok {
		return nil, fmt.Errorf("%w: delta for unknown content block %d", ErrMalformedStream, ev.Index.Value)
	}
	delta := ev.Delta.V
	want := map[string]string{
		"text_delta":       "text",
		"thinking_delta":   "thinking",
		"input_json_delta": "tool_use",
	}[string(delta.Type)]
	if want != "" && want != b.kind {
		return nil, fmt.Errorf("%w: %s for a %s block", ErrMalformedStream, delta.Type, b.kind)
	}
	switch delta.Type {
	case "text_delta":
		if delta.Text != "" {
			return []agentloop.Chunk{{Text: string(delta.Text)}}, nil
		}
	case "thinking_delta":
		if delta.Thinking != "" {
			return []agentloop.Chunk{{Reasoning: string(delta.Thinking)}}, nil
		}
	case "input_json_delta":
		if delta.PartialJSON != "" {
			b.args = true
			return []agentloop.Chunk{{ToolCall: &session.ChunkToolCall{Index: b.call, Arguments: string(delta.PartialJSON)}}}, nil
		}
	}
	// signature_delta and citations_delta carry nothing the loop keeps.
	return nil, nil
}

// end returns the final chunk, or an error if the stream stopped short.
func (d *decoder) end() (agentloop.Chunk, error) {
	if !d.stopped {
		return agentloop.Chunk{}, fmt.Errorf("%w: stream ended before message_stop", ErrMalformedStream)
	}
	if d.stop == "" {
		return agentloop.Chunk{}, fmt.Errorf("%w: message ended without a stop_reason", ErrMalformedStream)
	}
	return agentloop.Chunk{
		Usage:  &session.Usage{Input: d.input, Output: d.output},
		Finish: finishReason(d.stop, d.calls > 0),
	}, nil
}

// finishReason maps a stop_reason to the loop's vocabulary: end_turn,
// stop_sequence, refusal (the model's answer) and pause_turn (which only
// follows server tools, never requested) all mean stop.
func finishReason(reason string, calls bool) string {
	switch reason {
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	}
	if calls {
		// A server that calls tools but says end_turn: the calls are what
		// the loop must act on.
		return "tool_calls"
	}
	return "stop"
}
