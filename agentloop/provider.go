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
// is marked (see [Request.LoopBuilt]) and sealed; one-shot requests built
// elsewhere (a summary, a title) are not.
type Request struct {
	// Session is the id of the session the request was built from.
	Session string
	// Turn and Step locate the in-flight step in the log.
	Turn, Step int
	// StepStart is the seq of the in-flight step's step/start event: the
	// messages are the fold of every event before it.
	StepStart int64
	Header    session.Header
	Messages  []session.Message

	loopBuilt bool
	seal      string    // digest of the request as built, logged in request/digest
	built     *snapshot // what the digest was computed over, checked at the provider
}

// LoopBuilt reports whether the agent loop built the request, which makes
// it subject to the request invariants.
func (r *Request) LoopBuilt() bool { return r.loopBuilt }

// Subject implements bus.Subjecter: requests are dispatched about their
// session.
func (r *Request) Subject() any { return r.Session }

// Chunk is one streamed delta of a model reply. Exactly one of Text,
// Reasoning or ToolCall is set on a content chunk; a final chunk may carry
// only Usage and Finish.
type Chunk struct {
	Text      string
	Reasoning string
	ToolCall  *ToolCallDelta
	// Usage, when set, is the token usage of the whole reply so far.
	Usage *Usage
	// Finish, when set, is the reason the model stopped: "stop",
	// "tool_calls", "length" or "error".
	Finish string
}

// ToolCallDelta is a fragment of a streamed tool call. Fragments with the
// same Index belong to one call; ID and Name arrive on the first.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	Input  int `json:"input"`
	Output int `json:"output"`
}

// Stream is a model reply, yielded chunk by chunk. An error ends it.
type Stream = iter.Seq2[Chunk, error]

// Provider streams model replies. Implementations send exactly the request
// they are given.
type Provider interface {
	Stream(ctx context.Context, req *Request) (Stream, error)
}

// ProviderService is the service the one enabled provider plugin provides.
var ProviderService = bus.NewService[Provider]("provider")

// LLMStream is the llm/stream waterfall. Its innermost fallback is the
// configured provider, reached only with the request exactly as it was
// sealed.
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

// Namer is implemented by providers that name themselves; the name is
// logged as the request header's provider.
type Namer interface {
	Name() string
}
