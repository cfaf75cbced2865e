package openai

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/vigil-run/vigil/plugins/internal/eventstream"
	"github.com/vigil-run/vigil/plugins/internal/providerhttp"
)

var (
	// ErrMalformedStream is the cause of a stream that could not be
	// decoded or ended before the server said why it stopped.
	ErrMalformedStream = providerhttp.ErrMalformedStream
	// ErrStreamReused is returned by a stream ranged over a second time.
	ErrStreamReused = eventstream.ErrStreamReused
	// ErrStreamIdle is the cause of a response that sent nothing for the
	// config's stream_idle_timeout.
	ErrStreamIdle = providerhttp.ErrStreamIdle
	// ErrResponseTooLarge is the cause of a response whose body grew past
	// the config's max_response_bytes.
	ErrResponseTooLarge = providerhttp.ErrResponseTooLarge
)

// fail turns err into a *agentloop.ProviderError whose text does not
// contain the API key (see providerhttp.Fail).
func (p *Provider) fail(ctx context.Context, err error, delivered bool) error {
	return providerhttp.Fail(ctx, providerName, p.cfg.APIKey, err, delivered, func(err error) (int, string, bool, bool) {
		// An error event in a 200 stream: the server failed while
		// generating.
		var streamErr *ssestream.StreamError
		if !errors.As(err, &streamErr) {
			return 0, "", false, false
		}
		return 0, "server error while streaming: " + streamErrorMessage(streamErr), true, true
	})
}

// streamErrorMessage extracts error.message from an error event, falling
// back to the whole event.
func streamErrorMessage(e *ssestream.StreamError) string {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(e.Event.Data, &body) == nil && len(body.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		var s string
		if json.Unmarshal(body.Error, &s) == nil && s != "" {
			return s
		}
	}
	return strings.TrimSpace(string(e.Event.Data))
}
