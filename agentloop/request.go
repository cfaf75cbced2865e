package agentloop

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Digest returns the digest the loop sealed the request with (the
// [session.RequestDigest] of the request as built, which the loop logged
// in request/digest), or "" for a request the loop did not build.
func (r *Request) Digest() string { return r.seal }

// CloneMessages returns a deep copy of msgs. The tool calls of all
// messages share one new backing array (each message's slice capped), so
// a copy costs two allocations whatever its length.
func CloneMessages(msgs []session.Message) []session.Message {
	if msgs == nil {
		return nil
	}
	out := make([]session.Message, len(msgs))
	copy(out, msgs)
	n := 0
	for i := range out {
		n += len(out[i].ToolCalls)
	}
	if n == 0 {
		return out
	}
	calls := make([]session.ToolCall, 0, n)
	for i := range out {
		if tc := out[i].ToolCalls; tc != nil {
			start := len(calls)
			calls = append(calls, tc...)
			out[i].ToolCalls = calls[start:len(calls):len(calls)]
		}
	}
	return out
}

// CloneHeader returns a deep copy of h.
func CloneHeader(h session.Header) session.Header {
	if h.Temperature != nil {
		t := *h.Temperature
		h.Temperature = &t
	}
	h.Stop = slices.Clone(h.Stop)
	if h.Tools != nil {
		tools := make([]session.ToolSpec, len(h.Tools))
		for i, t := range h.Tools {
			t.Parameters = bytes.Clone(t.Parameters)
			tools[i] = t
		}
		h.Tools = tools
	}
	return h
}

// snapshot is what a loop-built request's digest was computed over: the
// session's fold (immutable) and the header as logged (owned).
type snapshot struct {
	header   session.Header
	messages []session.Message
}

// sealedFallback is the innermost llm/stream handler for a loop-built
// request. It refuses, with ErrRequestMutated, a request that is not the
// one the loop built or that no longer equals what its digest was
// computed over, and otherwise hands exactly that request to p.
//
// The digest is a pure function of the header and the messages, so a
// request equal to its snapshot has the sealed digest; comparing with the
// snapshot is what recomputing the digest would decide, without encoding
// and hashing the conversation again. The comparison is stricter than the
// digest where the canonical encoding is lenient (tool parameters compare
// byte for byte).
func sealedFallback(p Provider, built *Request) bus.Next[*Request, Stream] {
	return func(ctx context.Context, r *Request) (Stream, error) {
		if r != built {
			return nil, fmt.Errorf("%w: a listener replaced the request", ErrRequestMutated)
		}
		if what := r.built.differs(r); what != "" {
			return nil, fmt.Errorf("%w: %s changed (sealed digest %s)", ErrRequestMutated, what, short(r.seal))
		}
		return p.Stream(ctx, r)
	}
}

// differs names the first part of r that differs from the snapshot, or
// returns "".
func (s *snapshot) differs(r *Request) string {
	if s == nil {
		return "seal"
	}
	if len(r.Messages) != len(s.messages) {
		return "messages"
	}
	for i := range r.Messages {
		if !r.Messages[i].Equal(&s.messages[i]) {
			return fmt.Sprintf("message %d", i)
		}
	}
	a, b := &r.Header, &s.header
	switch {
	case a.Provider != b.Provider, a.Model != b.Model:
		return "header model"
	case a.System != b.System:
		return "header system"
	case a.MaxTokens != b.MaxTokens, (a.Temperature == nil) != (b.Temperature == nil),
		a.Temperature != nil && *a.Temperature != *b.Temperature, !slices.Equal(a.Stop, b.Stop):
		return "header sampling"
	case len(a.Tools) != len(b.Tools):
		return "header tools"
	}
	for i := range a.Tools {
		x, y := &a.Tools[i], &b.Tools[i]
		if x.Name != y.Name || x.Description != y.Description || !bytes.Equal(x.Parameters, y.Parameters) {
			return "header tools"
		}
	}
	return ""
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
