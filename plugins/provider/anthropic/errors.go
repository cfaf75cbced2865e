package anthropic

import (
	"context"
	"errors"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

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
		// An error event inside a 200 stream; the SDK parsed it.
		var apiErr *sdk.Error
		if !errors.As(err, &apiErr) {
			return 0, "", false, false
		}
		msg := apiErr.Message
		if msg == "" {
			msg = string(apiErr.Type())
		}
		status := streamErrorStatus[string(apiErr.Type())]
		return status, "error while streaming: " + msg, providerhttp.RetryableStatus(status), true
	})
}
