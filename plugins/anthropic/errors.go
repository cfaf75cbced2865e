package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/vigil-run/vigil/agentloop"
)

var (
	// ErrMalformedStream is the cause of a stream that could not be
	// decoded, broke the event protocol, or ended before message_stop.
	ErrMalformedStream = errors.New("malformed stream")
	// ErrStreamReused is returned by a stream ranged over a second time.
	ErrStreamReused = errors.New("stream already consumed")
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
// contain the API key. delivered says whether chunks were already
// yielded: after that nothing is safe to retry, since the loop has
// logged part of the reply.
func (p *Provider) fail(ctx context.Context, err error, delivered bool) error {
	pe := &agentloop.ProviderError{Provider: providerName}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		err = fmt.Errorf("%w: %w", ErrMalformedStream, err)
	}
	var apiErr *sdk.Error
	var netErr net.Error
	switch {
	case ctx.Err() != nil:
		// However the transport reported it, a cancelled request ends
		// with the context's error so callers can tell it apart.
		if !errors.Is(err, ctx.Err()) {
			err = ctx.Err()
		}
		pe.Err = err
	case errors.As(err, &apiErr):
		status := apiErr.StatusCode
		msg := apiErr.Message
		if msg == "" {
			msg = string(apiErr.Type())
		}
		if msg == "" {
			// Not an API error body (a proxy's page, say): show its start.
			msg = http.StatusText(status)
			if body := excerpt(apiErr.RawJSON()); body != "" {
				msg += ": " + body
			}
		}
		if status == http.StatusOK {
			// An error event inside the stream.
			status = streamErrorStatus[string(apiErr.Type())]
			msg = "error while streaming: " + msg
		} else if apiErr.Response != nil {
			pe.RetryAfter = retryAfter(apiErr.Response.Header)
		}
		pe.Status = status
		pe.Retryable = !delivered && retryableStatus(status)
		pe.Err = &messageError{msg: msg, err: err}
	case errors.Is(err, ErrMalformedStream), errors.As(err, &netErr):
		pe.Retryable = !delivered
		pe.Err = err
	default:
		pe.Err = err
	}
	pe.Err = scrub(pe.Err, p.cfg.APIKey)
	return pe
}

func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

// retryAfter reads how long the server asks us to wait: retry-after-ms,
// else retry-after in seconds or as an HTTP date.
func retryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// excerpt is the start of a response body, on one line, for an error
// message.
func excerpt(body string) string {
	const limit = 200
	s := strings.Join(strings.Fields(body), " ")
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "…"
	}
	return s
}

// messageError is an error with a readable message of its own that still
// unwraps to its cause.
type messageError struct {
	msg string
	err error
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.err }

// scrub returns err with every occurrence of key in its text replaced.
// The cause stays reachable through Unwrap for errors.Is and errors.As.
func scrub(err error, key string) error {
	if err == nil || key == "" {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, key) {
		return err
	}
	return &messageError{msg: strings.ReplaceAll(msg, key, "[redacted]"), err: err}
}
