package agentloop

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Request is what the loop sends to a model: the latest logged header and
// the fold of the log prefix before the step. A request built by the loop
// is marked (see [Request.LoopBuilt]) and sealed; a declared one-shot (a
// summary, a title: see [Complete]) is sealed too. A provider obtained
// through this package refuses any request without a seal, so a Request
// made outside the package can be dispatched but never sent.
type Request struct {
	// Session is the id of the session the request was built from.
	Session string
	// Turn and Step locate the in-flight step in the log.
	Turn, Step int
	// StepStart is the seq of the in-flight step's step/start event: the
	// messages are the fold of every event before it.
	StepStart int64
	Header    session.Header
	// Messages are read-only (see [session.Messages]): the loop shares
	// them with every listener and the provider, none of which can write
	// them.
	Messages session.Messages

	seal *seal // minted by this package only
}

// LoopBuilt reports whether the agent loop built the request for a step,
// which makes it subject to the request invariants.
func (r *Request) LoopBuilt() bool { return r.seal != nil && r.seal.purpose == "" }

// Purpose returns the purpose of a declared one-shot request ("compaction",
// "title", …), or "" for any other request.
func (r *Request) Purpose() string {
	if r.seal == nil {
		return ""
	}
	return r.seal.purpose
}

// Subject implements bus.Subjecter: requests are dispatched about their
// session.
func (r *Request) Subject() any { return r.Session }

// Chunk is one streamed delta of a model reply. Exactly one of Text,
// Reasoning or ToolCall is set on a content chunk; a final chunk may carry
// only Usage and Finish.
type Chunk struct {
	Text      string
	Reasoning string
	// ToolCall is a fragment of a streamed tool call, as the log's
	// assistant/chunk records it: fragments with the same Index belong to
	// one call; ID and Name arrive on the first.
	ToolCall *session.ChunkToolCall
	// Usage, when set, is the token usage of the whole reply so far.
	Usage *session.Usage
	// Finish, when set, is the reason the model stopped: "stop",
	// "tool_calls", "length" or "error".
	Finish string
}

// Stream is a model reply, yielded chunk by chunk. An error ends it.
type Stream = iter.Seq2[Chunk, error]

// Provider streams model replies. Implementations send exactly the request
// they are given.
//
// Whatever the implementation, the Provider this package hands out — from
// [ProviderService], or the one an [Agent] uses — is a wrapper that
// refuses, with [ErrUnsealed], every request the loop did not seal: a
// step's request reaches the implementation only through the llm/stream
// fallback of its own dispatch, unchanged since it was sealed, and a
// one-shot only through [Complete]. The implementation receives the
// request as sealed, in a Request of its own: its messages are a
// read-only view ([session.Messages]) that the loop and the listeners
// hold too and nobody can write, and its header is a copy no listener
// holds, which it may write freely. It builds what it sends from them
// (trimmed, redacted) in memory of its own; nothing it does reaches the
// next request, the log or a digest.
type Provider interface {
	Stream(ctx context.Context, req *Request) (Stream, error)
}

// ProviderKey is the type of [ProviderService]: a service key whose value
// is always the wrapper around the provider (see [Provider]).
type ProviderKey struct{ svc bus.Service[*guard] }

// ProviderService is the service the one enabled provider plugin
// provides; the agent plugin requires it.
var ProviderService = ProviderKey{svc: bus.NewService[*guard]("llm/provider")}

// Name returns the service name, "llm/provider".
func (k ProviderKey) Name() string { return k.svc.Name() }

// Provide wraps p and provides the wrapper under the service's name, owned
// by c's fiber (see [bus.Service.Provide]). A value provided under the name
// any other way is not a provider the loop or anyone else can get.
//
// It also provides it under the fiber's entry id ([bus.Fiber.ID]), so an
// agent whose config names that provider entry uses it: when several
// providers are mounted, the first applied is the service's, the others
// are reached by their ids.
func (k ProviderKey) Provide(c *bus.Context, p Provider) (withdraw func(), err error) {
	if p == nil {
		return nil, errors.New("agentloop: provide a nil provider")
	}
	g := guardProvider(p).(*guard)
	byEntry, err := providerEntries.Key(c.Fiber().ID()).Provide(c, g)
	if err != nil {
		return nil, err
	}
	if _, err := k.svc.Get(c.Root().Context()); err == nil && k == ProviderService {
		return byEntry, nil // another provider is the default
	}
	shared, err := k.svc.Provide(c, g)
	if err != nil {
		byEntry()
		return nil, err
	}
	return func() { shared(); byEntry() }, nil
}

// providerEntries holds every provider by the id of its entry.
var providerEntries = bus.NewServiceSet[*guard]("providers/")

// withProviderEntry makes the agent use the provider of entry id.
func withProviderEntry(c *bus.Context, id string) Option {
	return func(a *Agent) {
		a.provider = func() (Provider, error) {
			g, err := providerEntries.Key(id).Get(c)
			if err != nil {
				return nil, fmt.Errorf("provider entry %q: %w", id, err)
			}
			return g, nil
		}
	}
}

// Get returns the wrapped provider (see [bus.Service.Get]).
func (k ProviderKey) Get(c *bus.Context) (Provider, error) {
	g, err := k.svc.Get(c)
	if err != nil {
		return nil, fmt.Errorf("%w (a provider is provided with agentloop.ProviderService.Provide)", err)
	}
	return g, nil
}

// LLMStream is the llm/stream waterfall. Its innermost fallback is the
// configured provider, reached only with the request exactly as it was
// sealed. A step and a one-shot ([Complete]) run it; the invariants
// plugin checks requests in its veto phase, and provider/replay answers
// them as a listener.
var LLMStream = bus.NewWaterfall[*Request, Stream]("llm/stream")

// ProviderError is an error from a model provider. Retryable marks errors
// that are safe to retry (rate limits, server errors before any chunk).
type ProviderError struct {
	Provider   string
	Status     int
	Retryable  bool
	RetryAfter time.Duration
	Err        error
}

func (e *ProviderError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("provider %s: status %d: %v", e.Provider, e.Status, e.Err)
	}
	return fmt.Sprintf("provider %s: %v", e.Provider, e.Err)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// ErrRequestMutated is returned when a loop-built request reaches the
// provider different from the request that was built and checked.
var ErrRequestMutated = errors.New("agentloop: request mutated after it was sealed")

// ErrUnsealed is returned by a provider obtained through this package for
// a request the loop did not seal (built elsewhere, or a copy), or for a
// sealed request that did not come through its own dispatch's fallback.
var ErrUnsealed = errors.New("agentloop: request not sealed by the loop")

// Namer is implemented by providers that name themselves; the name is
// logged as the request header's provider.
type Namer interface {
	Name() string
}

// DefaultModeler is implemented by providers that ask for a model of
// their own (their config's) when a request's header names none. The loop
// puts that model in the header it logs and sends, so the header in force
// always names the model the provider is asked for: budgets price it,
// replay compares it, telemetry names spans after it.
type DefaultModeler interface {
	DefaultModel() string
}

// fillHeader names p in h, and p's default model when h names none: what
// p sends in their place is then logged.
func fillHeader(h *session.Header, p Provider) {
	if n, ok := p.(Namer); ok && h.Provider == "" {
		h.Provider = n.Name()
	}
	if d, ok := p.(DefaultModeler); ok && h.Model == "" {
		h.Model = d.DefaultModel()
	}
}
