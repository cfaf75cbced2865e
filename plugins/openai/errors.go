package openai

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

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/vigil-run/vigil/agentloop"
)

var (
	// ErrMalformedStream is the cause of a stream that could not be
	// decoded or ended before the server said why it stopped.
	ErrMalformedStream = errors.New("malformed stream")
	// ErrStreamReused is returned by a stream ranged over a second time.
	ErrStreamReused = errors.New("stream already consumed")
)

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
	var streamErr *ssestream.StreamError
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
	case errors.As(err, &streamErr):
		// An error event in a 200 stream: the server failed while
		// generating, which is worth another attempt if nothing was
		// delivered yet.
		pe.Retryable = !delivered
		pe.Err = &messageError{msg: "server error while streaming: " + streamErrorMessage(streamErr), err: err}
	case errors.Is(err, ErrMalformedStream):
		pe.Retryable = !delivered
		pe.Err = err
	case errors.As(err, &netErr):
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

// retryAfter reads how long the server asks us to wait: retry-after-ms
// (OpenAI), else retry-after in seconds or as an HTTP date.
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

// statusError is a response with an error status. The provider reads
// these itself (see checkStatus) because servers disagree on the shape of
// the body: {"error":{"message":…}} from OpenAI and llama.cpp,
// {"error":"…"} from Ollama, {"message":…} from vLLM.
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

// errorMessage finds the message in an error body, or falls back to the
// status text and the start of the body (a proxy's page, say).
func errorMessage(code int, body []byte) string {
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
