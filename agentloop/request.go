package agentloop

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Digest returns the digest the loop sealed the request with (the
// [session.RequestDigest] of the request as built, which the loop logs in
// request/digest or request/oneshot), or "" for a request the loop did not
// seal.
func (r *Request) Digest() string {
	if r.seal == nil {
		return ""
	}
	return r.seal.digest
}

// seal is the loop's mark on a request it sends: a loop-built step request
// or a declared one-shot. Only this package can make one (the type and the
// Request field are unexported), and it is bound to the one *Request it
// was minted for.
//
// It owns what it compares with: built is the request as the loop built
// it, and the digest was computed over exactly that. Its messages are a
// read-only view ([session.Messages]; for a step, of the loop's own fold
// of the log), which the listeners' request and the provider's carry too:
// nobody holding a view can write what it shows, so sharing it is safe.
// Its header is one no one outside the package holds; the listeners and
// the provider each get a copy of their own (see handedHeaders), so
// nothing a listener does to its header — at any time — reaches the
// provider, and nothing the provider does to its header reaches anything
// the loop keeps.
type seal struct {
	req     *Request // the request it was minted for; any other is unsealed
	purpose string   // a one-shot's purpose; "" for a step
	built   Request  // owned: the request as built
	digest  string
	// hdrs holds the listeners' copy of a step's header, which the
	// request carries, and the provider's (nil for a one-shot, whose
	// copies are made afresh).
	hdrs *handedHeaders

	// log appends the request's record (request/digest of a step,
	// request/oneshot of a one-shot); it runs once, when the request is
	// first handed to the provider, and its error is kept in logErr.
	log    func() error
	logged bool
	logErr error

	// armed is set by the fallback just before it calls the provider and
	// consumed by the guard: a sealed request reaches a provider only
	// through the fallback of its own dispatch.
	armed atomic.Bool
}

// handoff is the request the guard gives the provider: the request as
// built, still sealed (providers may read LoopBuilt and Digest), with a
// header of the provider's own, which it may write freely. Its messages
// are the sealed view, which nobody can write. For a step the header is
// the provider's copy kept between steps, copied again when it no longer
// equals the sealed one (see handedHeaders.renew); a one-shot's is made
// afresh.
func (s *seal) handoff() *Request {
	out := s.built
	if s.hdrs != nil {
		out.Header = *s.hdrs.renew(&s.built.Header)
	} else {
		out.Header = session.CloneHeader(out.Header)
	}
	out.seal = s
	return &out
}

// guard is the wrapper agentloop installs around every provider (see
// [ProviderService] and [WithProvider]). It refuses, with ErrUnsealed,
// any request the loop did not seal, or a sealed one that was not handed
// over by its dispatch's fallback, and gives the provider the request as
// sealed.
type guard struct{ p Provider }

// guardProvider wraps p, once.
func guardProvider(p Provider) Provider {
	switch g := p.(type) {
	case nil:
		return nil
	case *guard:
		return g
	}
	return &guard{p: p}
}

// Stream implements Provider.
func (g *guard) Stream(ctx context.Context, r *Request) (Stream, error) {
	if r == nil || r.seal == nil || r.seal.req != r {
		return nil, fmt.Errorf("%w: a provider receives only requests the loop built or declared (see agentloop.Complete)", ErrUnsealed)
	}
	if !r.seal.armed.CompareAndSwap(true, false) {
		return nil, fmt.Errorf("%w: a sealed request reaches the provider only through its own llm/stream dispatch", ErrUnsealed)
	}
	return g.p.Stream(ctx, r.seal.handoff())
}

// Name implements Namer with the wrapped provider's name.
func (g *guard) Name() string {
	if n, ok := g.p.(Namer); ok {
		return n.Name()
	}
	return ""
}

// DefaultModel implements DefaultModeler with the wrapped provider's
// default model ("" when it has none).
func (g *guard) DefaultModel() string {
	if d, ok := g.p.(DefaultModeler); ok {
		return d.DefaultModel()
	}
	return ""
}

// sealedFallback is the innermost llm/stream handler for a sealed
// request. It refuses, with ErrRequestMutated, a request that is not the
// one the loop sealed or that no longer equals what the seal owns; then it
// logs the request (once: a retry sends the same request) and hands it to
// p, which is a guard.
//
// The digest is a pure function of the header and the messages, so a
// request equal to the sealed one has the sealed digest; comparing is what
// recomputing the digest would decide, without encoding and hashing the
// conversation again. The comparison is stricter than the digest where the
// canonical encoding is lenient (tool parameters compare byte for byte).
func sealedFallback(p Provider, sealed *Request) bus.Next[*Request, Stream] {
	return func(ctx context.Context, r *Request) (Stream, error) {
		if r != sealed {
			return nil, fmt.Errorf("%w: a listener replaced the request", ErrRequestMutated)
		}
		s := r.seal
		if what := s.differs(r); what != "" {
			return nil, fmt.Errorf("%w: %s changed (sealed digest %s)", ErrRequestMutated, what, short(s.digest))
		}
		if !s.logged && s.log != nil {
			s.logged = true
			if s.logErr = s.log(); s.logErr != nil {
				return nil, s.logErr
			}
		}
		s.armed.Store(true)
		defer s.armed.Store(false)
		return p.Stream(ctx, r)
	}
}

// differs names the first part of r that differs from the sealed request,
// or returns "".
func (s *seal) differs(r *Request) string {
	if s == nil || s.req != r {
		return "seal"
	}
	b := &s.built
	if r.Session != b.Session || r.Turn != b.Turn || r.Step != b.Step || r.StepStart != b.StepStart {
		return "step"
	}
	// The listeners' request carries the sealed view itself unless a
	// listener put another there: then it is compared message by message.
	if i := r.Messages.Diff(b.Messages); i >= 0 {
		if r.Messages.Len() != b.Messages.Len() {
			return "messages"
		}
		return fmt.Sprintf("message %d", i)
	}
	return headerDiffers(&r.Header, &b.Header)
}

// headerDiffers names the first part of x that differs from y, byte for
// byte, or returns "".
func headerDiffers(x, y *session.Header) string {
	switch {
	case x.Provider != y.Provider, x.Model != y.Model:
		return "header model"
	case x.System != y.System:
		return "header system"
	case x.MaxTokens != y.MaxTokens, (x.Temperature == nil) != (y.Temperature == nil),
		x.Temperature != nil && *x.Temperature != *y.Temperature, !slices.Equal(x.Stop, y.Stop):
		return "header sampling"
	case len(x.Tools) != len(y.Tools):
		return "header tools"
	case !bytes.Equal(x.OutputSchema, y.OutputSchema):
		return "header output_schema"
	}
	for i := range x.Tools {
		t, u := &x.Tools[i], &y.Tools[i]
		if t.Name != u.Name || t.Description != u.Description || !bytes.Equal(t.Parameters, u.Parameters) {
			return "header tools"
		}
	}
	return ""
}

// sameHeader reports whether x and y are equal byte for byte, and so have
// the same canonical encoding.
func sameHeader(x, y *session.Header) bool { return headerDiffers(x, y) == "" }

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// mint seals a request as built: the returned request, for the listeners,
// carries built's messages (a read-only view) and hdrs.lis as its header
// (nil: a copy is made), the provider is handed hdrs.prov, and the seal
// keeps built itself, whose header the caller must not hand out. log
// appends the request's record when it is first handed to the provider.
func mint(built Request, hdrs *handedHeaders, purpose, digest string, log func() error) *Request {
	built.seal = nil
	h := built.Header
	if hdrs != nil {
		h = hdrs.lis
	} else {
		h = session.CloneHeader(h)
	}
	r := &Request{Session: built.Session, Turn: built.Turn, Step: built.Step, StepStart: built.StepStart,
		Header: h, Messages: built.Messages}
	r.seal = &seal{req: r, purpose: purpose, built: built, digest: digest, log: log, hdrs: hdrs}
	return r
}
