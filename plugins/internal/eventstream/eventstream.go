// Package eventstream reads a provider's server-sent event stream and turns
// it into an agentloop.Stream: the loop the OpenAI and Anthropic providers
// share. [Reader] reads events as the official SDKs read them; [Typed]
// parses each into a provider's wire type, whose fields are [String],
// [Int], [Object] and [List] where the SDKs read leniently (a value of
// another JSON type than the API's is taken as the SDKs take it); [Stream]
// decodes those into chunks.
package eventstream

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/vigil-run/vigil/agentloop"
)

// ErrStreamReused is returned by a stream ranged over a second time.
var ErrStreamReused = errors.New("stream already consumed")

// Events is a stream of a provider's events, such as [Typed] returns.
type Events[E any] interface {
	Next() bool
	Current() E
	Err() error
	Close() error
}

// Decoder turns events into chunks: Decode each event as it comes, End
// once the stream is over (the final chunks, or an error when the stream
// ended before the server said why it stopped).
type Decoder[E any] struct {
	Decode func(E) ([]agentloop.Chunk, error)
	End    func() ([]agentloop.Chunk, error)
}

// Fail turns an error into the provider's error; delivered says whether
// chunks were already yielded (then nothing is safe to retry).
type Fail func(ctx context.Context, err error, delivered bool) error

// Stream adapts events to an agentloop.Stream that may be ranged over
// once. The events are closed however iteration ends.
func Stream[E any](ctx context.Context, provider string, events Events[E], d Decoder[E], fail Fail) agentloop.Stream {
	var used atomic.Bool
	return func(yield func(agentloop.Chunk, error) bool) {
		if used.Swap(true) {
			yield(agentloop.Chunk{}, &agentloop.ProviderError{Provider: provider, Err: ErrStreamReused})
			return
		}
		defer events.Close()
		delivered := false
		send := func(chunks []agentloop.Chunk) bool {
			for _, c := range chunks {
				delivered = true
				if !yield(c, nil) {
					return false
				}
			}
			return true
		}
		for events.Next() {
			chunks, err := d.Decode(events.Current())
			if err != nil {
				yield(agentloop.Chunk{}, fail(ctx, err, delivered))
				return
			}
			if !send(chunks) {
				return
			}
		}
		if err := events.Err(); err != nil {
			yield(agentloop.Chunk{}, fail(ctx, err, delivered))
			return
		}
		if ctx.Err() != nil {
			yield(agentloop.Chunk{}, fail(ctx, ctx.Err(), delivered))
			return
		}
		chunks, err := d.End()
		if err != nil {
			yield(agentloop.Chunk{}, fail(ctx, err, delivered))
			return
		}
		send(chunks)
	}
}
