// Package providerhttp is what the HTTP model providers share: their
// default client, reading error responses whatever their shape, deciding
// what is safe to retry, and keeping API keys out of error text.
package providerhttp

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

	"github.com/vigil-run/vigil/agentloop"
)

// ErrMalformedStream is the cause of a stream that could not be decoded,
// broke its event protocol, or ended before the server said why it
// stopped.
var ErrMalformedStream = errors.New("malformed stream")

// StreamEvent recognizes an error the server reported inside a 200
// stream: the HTTP status the event stands for (0 when unknown), a
// readable message, and whether the failure is worth another attempt.
type StreamEvent func(err error) (status int, msg string, retryable, ok bool)

// Fail turns err into a *agentloop.ProviderError of provider whose text
// does not contain key. delivered says whether chunks were already
// yielded: after that nothing is safe to retry, since the loop has logged
// part of the reply.
func Fail(ctx context.Context, provider, key string, err error, delivered bool, event StreamEvent) error {
	pe := &agentloop.ProviderError{Provider: provider}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		err = fmt.Errorf("%w: %w", ErrMalformedStream, err)
	}
	var status *StatusError
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
		pe.Status = status.Code
		pe.Retryable = !delivered && RetryableStatus(status.Code)
		pe.RetryAfter = RetryAfter(status.Header)
		pe.Err = err
	case event != nil:
		code, msg, retryable, ok := event(err)
		if !ok {
			pe.Retryable = !delivered && (errors.Is(err, ErrMalformedStream) || errors.As(err, &netErr))
			pe.Err = err
			break
		}
		// The server failed while generating: another attempt is safe only
		// if nothing was delivered yet.
		pe.Status = code
		pe.Retryable = !delivered && retryable
		pe.Err = &messageError{msg: msg, err: err}
	case errors.Is(err, ErrMalformedStream), errors.As(err, &netErr):
		pe.Retryable = !delivered
		pe.Err = err
	default:
		pe.Err = err
	}
	pe.Err = Scrub(pe.Err, key)
	return pe
}

// RetryableStatus reports whether a request that failed with code may be
// sent again: rate limits and server errors.
func RetryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

// RetryAfter reads how long the server asks us to wait: retry-after-ms,
// else retry-after in seconds or as an HTTP date.
func RetryAfter(h http.Header) time.Duration {
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

// StatusError is a response with an error status. The providers read
// these themselves (see CheckStatus) because servers disagree on the
// shape of the body: {"error":{"message":…}} from OpenAI, llama.cpp and
// Anthropic, {"error":"…"} from Ollama, {"message":…} or {"detail":…}
// from vLLM and proxies.
type StatusError struct {
	Code   int
	Header http.Header
	Msg    string
}

func (e *StatusError) Error() string { return e.Msg }

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// CheckStatus is SDK middleware that turns an error status into a
// *StatusError before the SDK parses the body.
func CheckStatus(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	return nil, &StatusError{Code: res.StatusCode, Header: res.Header, Msg: ErrorMessage(res.StatusCode, body)}
}

// ErrorMessage finds the message in an error body, or falls back to the
// status text and the start of the body (a proxy's page, say).
func ErrorMessage(code int, body []byte) string {
	var shape struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
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
		case shape.Detail != "":
			return shape.Detail
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

// Scrub returns err with every occurrence of key in its text replaced.
// The cause stays reachable through Unwrap for errors.Is and errors.As.
func Scrub(err error, key string) error {
	if err == nil || key == "" {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, key) {
		return err
	}
	return &messageError{msg: strings.ReplaceAll(msg, key, "[redacted]"), err: err}
}
