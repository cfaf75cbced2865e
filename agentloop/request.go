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

// newLoopRequest builds a marked, sealed request. Header and messages are
// copied deeply: the session's fold and header cache are shared and must
// never be reachable through a request that listeners may change.
func newLoopRequest(sessID string, turn, step int, stepStart int64, h session.Header, msgs []session.Message) *Request {
	r := &Request{
		Session:   sessID,
		Turn:      turn,
		Step:      step,
		StepStart: stepStart,
		Header:    CloneHeader(h),
		Messages:  CloneMessages(msgs),
		loopBuilt: true,
	}
	r.seal = session.RequestDigest(r.Header, r.Messages)
	return r
}

// CloneMessages returns a deep copy of msgs.
func CloneMessages(msgs []session.Message) []session.Message {
	if msgs == nil {
		return nil
	}
	out := make([]session.Message, len(msgs))
	copy(out, msgs)
	for i := range out {
		if out[i].ToolCalls != nil {
			out[i].ToolCalls = slices.Clone(out[i].ToolCalls)
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

// sealedFallback is the innermost llm/stream handler for a loop-built
// request: it refuses a request that is not the one the loop built, or
// whose digest no longer matches the seal, and otherwise hands exactly
// that request to p.
func sealedFallback(p Provider, built *Request) bus.Next[*Request, Stream] {
	return func(ctx context.Context, r *Request) (Stream, error) {
		if r != built {
			return nil, fmt.Errorf("%w: a listener replaced the request", ErrRequestMutated)
		}
		if got := session.RequestDigest(r.Header, r.Messages); got != r.seal {
			return nil, fmt.Errorf("%w: digest %s, sealed %s", ErrRequestMutated, short(got), short(r.seal))
		}
		return p.Stream(ctx, r)
	}
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
