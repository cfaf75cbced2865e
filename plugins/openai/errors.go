package openai

import (
	"bytes"
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

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/vigil-run/vigil/agentloop"
)

const headerTimeout = 10 * time.Minute

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
	var apiErr *oai.Error
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
	case errors.As(err, &apiErr):
		pe.Status = apiErr.StatusCode
		pe.Retryable = !delivered && retryableStatus(apiErr.StatusCode)
		if apiErr.Response != nil {
			pe.RetryAfter = retryAfter(apiErr.Response.Header)
		}
		msg := apiErr.Message
		if msg == "" {
			// Not an API error body (a proxy's page, say): show its start.
			msg = http.StatusText(apiErr.StatusCode)
			if body := excerpt(apiErr.Response); body != "" {
				msg += ": " + body
			}
		}
		pe.Err = &messageError{msg: msg, err: err}
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

// excerpt is the start of a response body, on one line, for an error
// message. The SDK has buffered the body; it is put back as it was.
func excerpt(res *http.Response) string {
	const limit = 200
	if res == nil || res.Body == nil {
		return ""
	}
	head, _ := io.ReadAll(io.LimitReader(res.Body, limit+1))
	res.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), res.Body), res.Body}
	s := strings.Join(strings.Fields(string(head)), " ")
	if len(head) > limit {
		s = strings.ToValidUTF8(s[:min(len(s), limit)], "") + "…"
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
