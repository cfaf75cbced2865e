package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/vigil-run/vigil/plugins/internal/eventstream"
	"github.com/vigil-run/vigil/plugins/internal/providerhttp"
)

var (
	// ErrMalformedStream is the cause of a stream that could not be
	// decoded, broke the event protocol, or ended before message_stop.
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

// streamErrorStatus is the HTTP status an error event stands for: the
// API reports failures that happen mid-stream as events in a 200 reply.
var streamErrorStatus = map[string]int{
	"rate_limit_error": http.StatusTooManyRequests,
	"api_error":        http.StatusInternalServerError,
	"timeout_error":    http.StatusGatewayTimeout,
	"overloaded_error": 529,
}

// fail turns err into a *agentloop.ProviderError whose text does not
// contain the API key (see providerhttp.Fail).
func (p *Provider) fail(ctx context.Context, err error, delivered bool) error {
	return providerhttp.Fail(ctx, providerName, p.cfg.APIKey, err, delivered, func(err error) (int, string, bool, bool) {
		// An error event inside a 200 stream.
		var se *streamError
		if !errors.As(err, &se) {
			return 0, "", false, false
		}
		msg := se.Message
		if msg == "" {
			msg = se.Type
		}
		status := streamErrorStatus[se.Type]
		return status, "error while streaming: " + msg, providerhttp.RetryableStatus(status), true
	})
}

// streamError is an error event: {"type":"error","error":{"type","message"}}.
// Data that is not JSON, or lacks either, leaves it empty, as the SDK
// leaves its error.
type streamError struct {
	Type, Message string
	data          []byte
}

func newStreamError(data []byte) *streamError {
	e := &streamError{data: data}
	var body eventstream.Object[struct {
		Error eventstream.Object[struct {
			Type    eventstream.String `json:"type"`
			Message eventstream.String `json:"message"`
		}] `json:"error"`
	}]
	if json.Unmarshal(data, &body) == nil {
		e.Type, e.Message = string(body.V.Error.V.Type), string(body.V.Error.V.Message)
	}
	return e
}

func (e *streamError) Error() string {
	return "received error while streaming: " + string(e.data)
}
