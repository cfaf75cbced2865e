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
	var status *statusError
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
		pe.Retryable = !delivered && shouldRetry(status.Code, status.Header)
		pe.RetryAfter = retryAfter(status.Header)
		pe.Err = err
	case event != nil:
		code, msg, retryable, ok := event(err)
		if !ok {
			pe.Retryable = !delivered && transient(err)
			pe.Err = err
			break
		}
		// The server failed while generating: another attempt is safe only
		// if nothing was delivered yet.
		pe.Status = code
		pe.Retryable = !delivered && retryable
		pe.Err = &messageError{msg: msg, err: err}
	case transient(err):
		pe.Retryable = !delivered
		pe.Err = err
	default:
		pe.Err = err
	}
	pe.Err = scrub(pe.Err, key)
	return pe
}

// transient reports whether err may not happen again: a broken or
// malformed stream, a stalled one. (A response too large would be as large
// again.)
func transient(err error) bool {
	var netErr net.Error
	return errors.Is(err, ErrMalformedStream) || errors.Is(err, ErrStreamIdle) || errors.As(err, &netErr)
}

// RetryableStatus reports whether a request that failed with code may be
// sent again: rate limits and server errors.
func RetryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

// shouldRetry reports whether a request that failed with code and header
// may be sent again. The server's x-should-retry ("true" or "false")
// overrides the status, as the official SDKs let it.
func shouldRetry(code int, header http.Header) bool {
	switch v := strings.TrimSpace(header.Get("X-Should-Retry")); {
	case strings.EqualFold(v, "true"):
		return true
	case strings.EqualFold(v, "false"):
		return false
	}
	return RetryableStatus(code)
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

// statusError is a response with an error status. The providers read
// these themselves (see CheckStatus) because servers disagree on the
// shape of the body: {"error":{"message":…}} from OpenAI, llama.cpp and
// Anthropic, {"error":"…"} from Ollama, {"message":…} or {"detail":…}
// from vLLM and proxies.
type statusError struct {
	Code   int
	Header http.Header
	Msg    string
}

func (e *statusError) Error() string { return e.Msg }

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// Middleware wraps the sending of a request, as [CheckStatus] and [Bound]
// do around an [Endpoint]'s client.
type Middleware = func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error)

// CheckStatus returns middleware that turns an error status into a
// *statusError before the provider reads the body. key is scrubbed from the
// message, so a body that echoes the credential does not leak it.
func CheckStatus(key string) Middleware {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		res, err := next(req)
		if err != nil || res.StatusCode < 400 {
			return res, err
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		return nil, &statusError{Code: res.StatusCode, Header: res.Header, Msg: errorMessage(res.StatusCode, body, key)}
	}
}

// errorMessage finds the message in an error body, or falls back to the
// status text and the start of the body (a proxy's page, say). No part of
// key of minKeyPart characters or more is left in it.
func errorMessage(code int, body []byte, key string) string {
	// The body may have been cut by the read limit: scrub its edges too.
	text := redact(string(body), key, true)
	var shape struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal([]byte(text), &shape) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var flat string
		msg := ""
		switch {
		case json.Unmarshal(shape.Error, &nested) == nil && nested.Message != "":
			msg = nested.Message
		case json.Unmarshal(shape.Error, &flat) == nil && flat != "":
			msg = flat
		case shape.Message != "":
			msg = shape.Message
		case shape.Detail != "":
			msg = shape.Detail
		}
		if msg != "" {
			// JSON escapes (\u0073k-…) could have hidden the key from
			// the scrub of the raw body.
			return redact(msg, key, false)
		}
	}
	msg := http.StatusText(code)
	if msg == "" {
		msg = "status " + strconv.Itoa(code)
	}
	if s := excerpt(text, key); s != "" {
		msg += ": " + s
	}
	return msg
}

// excerpt is the start of an already scrubbed text, on one line, for an
// error message.
func excerpt(text, key string) string {
	const limit = 200
	s := strings.Join(strings.Fields(text), " ")
	if len(s) > limit {
		s = redact(strings.ToValidUTF8(s[:limit], ""), key, true) + "…"
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

// scrub returns err with every occurrence of key in its text replaced
// (see redact). The cause stays reachable through Unwrap for errors.Is
// and errors.As.
func scrub(err error, key string) error {
	if err == nil || key == "" {
		return err
	}
	msg := err.Error()
	clean := redact(msg, key, false)
	if clean == msg {
		return err
	}
	return &messageError{msg: clean, err: err}
}
