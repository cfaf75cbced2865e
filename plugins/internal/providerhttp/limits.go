package providerhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Bounds of one response, when the provider's config sets none: a stream
// that sends nothing for DefaultStreamIdleTimeout, or more than
// DefaultMaxResponseBytes in all, ends with an error. The longest replies
// (over 100k output tokens, sent as a few hundred bytes of SSE per token)
// stay well within the size; the idle bound leaves a model minutes to
// think without a word.
const (
	DefaultStreamIdleTimeout = 5 * time.Minute
	DefaultMaxResponseBytes  = 64 << 20
)

var (
	// ErrStreamIdle ends a response whose body sent nothing for the idle
	// timeout (a stalled server or connection).
	ErrStreamIdle = errors.New("stream stalled")
	// ErrResponseTooLarge ends a response whose body grew past the size
	// limit (a server that never ends its stream).
	ErrResponseTooLarge = errors.New("response too large")
)

// Limits bound one response of a provider; zero fields take the defaults.
type Limits struct {
	// Idle is the longest wait for the next bytes of a response body.
	Idle time.Duration
	// MaxBytes is the most a response body may hold.
	MaxBytes int64
}

// CheckLimits reports why the config's stream_idle_timeout and
// max_response_bytes cannot be used.
func CheckLimits(idle time.Duration, maxBytes int64) error {
	var errs []error
	if idle < 0 {
		errs = append(errs, errors.New("stream_idle_timeout must not be negative"))
	}
	if maxBytes < 0 {
		errs = append(errs, errors.New("max_response_bytes must not be negative"))
	}
	return errors.Join(errs...)
}

func (l Limits) idle() time.Duration {
	if l.Idle > 0 {
		return l.Idle
	}
	return DefaultStreamIdleTimeout
}

func (l Limits) maxBytes() int64 {
	if l.MaxBytes > 0 {
		return l.MaxBytes
	}
	return DefaultMaxResponseBytes
}

// Bound returns middleware that bounds the body of every response by
// l: a read that waits longer than the idle timeout, or a body that grows
// past the size limit, cancels the request and fails the read with an
// error wrapping [ErrStreamIdle] or [ErrResponseTooLarge] that names the
// setting to raise, logged on log (which may be nil). It goes after
// [CheckStatus], so that an error body is bounded too.
func Bound(l Limits, log hclog.Logger) Middleware {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	idle, maxBytes := l.idle(), l.maxBytes()
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		ctx, cancel := context.WithCancelCause(req.Context())
		res, err := next(req.WithContext(ctx))
		if err != nil || res == nil || res.Body == nil {
			cancel(nil)
			return res, err
		}
		b := &boundedBody{body: res.Body, left: maxBytes, max: maxBytes, idle: idle, cancel: cancel, log: log, host: req.URL.Host}
		// One timer, armed only while a read waits: a reader that is slow
		// to read (a listener of the loop taking its time) is no stall.
		b.timer = time.AfterFunc(idle, func() { cancel(ErrStreamIdle) })
		b.timer.Stop()
		res.Body = b
		return res, nil
	}
}

// boundedBody is a response body under [Limits]. Like any body it is read
// by one goroutine at a time.
type boundedBody struct {
	body      io.ReadCloser
	left, max int64
	idle      time.Duration
	timer     *time.Timer
	cancel    context.CancelCauseFunc
	log       hclog.Logger
	host      string
	err       error // the limit that ended it, returned by every later read
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	b.timer.Reset(b.idle)
	n, err := b.body.Read(p)
	if !b.timer.Stop() {
		return 0, b.fail(fmt.Errorf("%w: the response sent nothing for %s (raise stream_idle_timeout if the model may think longer without a word)", ErrStreamIdle, b.idle))
	}
	if b.left -= int64(n); b.left < 0 {
		return 0, b.fail(fmt.Errorf("%w: the response went past %d bytes (max_response_bytes)", ErrResponseTooLarge, b.max))
	}
	return n, err
}

// fail ends the response with err, which later reads return too.
func (b *boundedBody) fail(err error) error {
	b.err = err
	b.cancel(err)
	b.log.Error("response ended", "host", b.host, "error", err)
	return err
}

func (b *boundedBody) Close() error {
	b.timer.Stop()
	err := b.body.Close()
	b.cancel(nil)
	return err
}
