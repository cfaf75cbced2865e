package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	var status *statusError
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
	case errors.As(err, &status):
		pe.Status = status.code
		pe.Retryable = !delivered && retryableStatus(status.code)
		pe.RetryAfter = retryAfter(status.header)
		pe.Err = err
	case errors.As(err, &apiErr):
		// An error event inside a 200 stream; the SDK parsed it.
		msg := apiErr.Message
		if msg == "" {
			msg = string(apiErr.Type())
		}
		pe.Status = streamErrorStatus[string(apiErr.Type())]
		pe.Retryable = !delivered && retryableStatus(pe.Status)
		pe.Err = &messageError{msg: "error while streaming: " + msg, err: err}
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

// statusError is a response with an error status. The provider reads
// these itself (see checkStatus) so that the body of a proxy or a
// compatible server, whatever its shape, still yields a message and the
// status is never lost to a decoding error.
type statusError struct {
	code   int
	header http.Header
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// checkStatus is SDK middleware that turns an error status into a
// *statusError before the SDK parses the body.
func checkStatus(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	return nil, &statusError{code: res.StatusCode, header: res.Header, msg: errorMessage(res.StatusCode, body)}
}

// errorMessage finds the message in an error body
// ({"type":"error","error":{"type":…,"message":…}} from the API), or
// falls back to the status text and the start of the body.
func errorMessage(code int, body []byte) string {
	var shape struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &shape) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var flat string
		switch {
		case json.Unmarshal(shape.Error, &nested) == nil && nested.Message != "":
			return nested.Message
		case json.Unmarshal(shape.Error, &flat) == nil && flat != "":
			return flat
		case shape.Message != "":
			return shape.Message
		}
	}
	msg := http.StatusText(code)
	if msg == "" {
		msg = "status " + strconv.Itoa(code)
	}
	if s := excerpt(body); s != "" {
		msg += ": " + s
	}
	return msg
}

// excerpt is the start of a body, on one line, for an error message.
func excerpt(body []byte) string {
	const limit = 200
	s := strings.Join(strings.Fields(string(body)), " ")
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
