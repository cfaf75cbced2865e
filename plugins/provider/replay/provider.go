package replay

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
)

// Errors of a replay, matched with errors.Is.
var (
	// ErrExhausted: a request came after every recorded step was served.
	ErrExhausted = errors.New("replay: asked for more than was recorded")
	// ErrIncomplete: the replay ended with recorded steps not served.
	ErrIncomplete = errors.New("replay: recording not fully consumed")
	// ErrDiverged: with Verify, a request's digest differs from the
	// recorded request/digest of its step.
	ErrDiverged = errors.New("replay: request differs from the recorded one")
	// ErrOneShot: a request the loop did not build (a summary, a title)
	// was not recorded as a step and cannot be served.
	ErrOneShot = errors.New("replay: one-shot requests are not recorded")
)

// Provider serves a recording's steps in order, one per loop-built
// request. It is safe for concurrent use.
type Provider struct {
	rec *Recording
	// Verify makes the provider refuse a request whose digest differs
	// from its step's recorded request/digest.
	Verify bool

	mu   sync.Mutex
	next int
}

// New returns a provider serving rec from its first step.
func New(rec *Recording) *Provider { return &Provider{rec: rec} }

// Name implements agentloop.Namer: the recorded provider's name, so that
// the replay's request headers equal the recording's.
func (p *Provider) Name() string { return p.rec.Provider }

// Remaining returns how many recorded steps have not been served.
func (p *Provider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.rec.Steps) - p.next
}

// Check reports a recording that was not fully consumed.
func (p *Provider) Check() error {
	if n := p.Remaining(); n > 0 {
		return fmt.Errorf("%w: %d of %d steps not served", ErrIncomplete, n, len(p.rec.Steps))
	}
	return nil
}

func (p *Provider) fail(err error) error {
	return &agentloop.ProviderError{Provider: "replay", Err: err}
}

// Stream implements agentloop.Provider.
func (p *Provider) Stream(ctx context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !req.LoopBuilt() {
		return nil, p.fail(ErrOneShot)
	}
	p.mu.Lock()
	if p.next >= len(p.rec.Steps) {
		n := len(p.rec.Steps)
		p.mu.Unlock()
		return nil, p.fail(fmt.Errorf("%w: turn %d step %d after %d recorded steps", ErrExhausted, req.Turn, req.Step, n))
	}
	st := p.rec.Steps[p.next]
	if p.Verify && st.Digest != "" && req.Digest() != st.Digest {
		p.mu.Unlock()
		return nil, p.fail(fmt.Errorf("%w: turn %d step %d (recorded as turn %d step %d)", ErrDiverged, req.Turn, req.Step, st.Turn, st.Step))
	}
	p.next++
	p.mu.Unlock()
	return p.serve(ctx, st)
}

// serve streams the recorded output of st: its chunks, then its failure
// or its usage and finish.
func (p *Provider) serve(ctx context.Context, st Step) (agentloop.Stream, error) {
	// The recorded failure is served as the turn/end logged it, so that
	// the turn ends with the same error again.
	if st.Err != "" && len(st.Chunks) == 0 {
		return nil, errors.New(st.Err)
	}
	return func(yield func(agentloop.Chunk, error) bool) {
		for _, c := range st.Chunks {
			if err := ctx.Err(); err != nil {
				yield(agentloop.Chunk{}, err)
				return
			}
			if c.ToolCall != nil {
				tc := *c.ToolCall
				c.ToolCall = &tc
			}
			if !yield(c, nil) {
				return
			}
		}
		if st.Err != "" {
			yield(agentloop.Chunk{}, errors.New(st.Err))
			return
		}
		if st.Usage != nil || st.Finish != "" {
			last := agentloop.Chunk{Finish: st.Finish}
			if st.Usage != nil {
				u := *st.Usage
				last.Usage = &u
			}
			yield(last, nil)
		}
	}, nil
}

// Listen registers p on llm/stream, owned by c's fiber, as a listener that
// answers loop-built requests from the recording and never calls next;
// one-shot requests pass on to next. The invariants plugin's check runs
// before it in any case (in the dispatch's veto phase). Nothing is handed
// to a provider, so the loop logs no request/digest for the steps it
// answers; with Verify each request's sealed digest is compared with the
// recorded one. The request header still names the configured provider,
// so the requests equal the recorded ones when that provider has the
// recorded provider's name.
func Listen(c *bus.Context, p *Provider) (dispose func()) {
	return agentloop.LLMStream.On(c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
		if !req.LoopBuilt() {
			return next(ctx, req)
		}
		return p.Stream(ctx, req)
	})
}

var (
	_ agentloop.Provider = (*Provider)(nil)
	_ agentloop.Namer    = (*Provider)(nil)
)
