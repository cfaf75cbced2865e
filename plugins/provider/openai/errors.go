package openai

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

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
		var streamErr *streamError
		if !errors.As(err, &streamErr) {
			return 0, "", false, false
		}
		return 0, "server error while streaming: " + streamErr.message(), true, true
	})
}

// streamError is an event whose data has an error key: the server failed
// while generating.
type streamError struct {
	data []byte
}

func (e *streamError) Error() string {
	return "received error while streaming: " + strings.TrimSpace(string(e.data))
}

// message extracts error.message from the event, falling back to the
// whole event.
func (e *streamError) message() string {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(e.data, &body) == nil && len(body.Error) > 0 {
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
	return strings.TrimSpace(string(e.data))
}
