package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// The limits [HTTPServer] and [Options] put on each request, so that a
// slow or idle client holds a connection for a bounded time.
const (
	// DefaultReadHeaderTimeout bounds how long a request's headers may
	// take to arrive.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout bounds how long a kept-alive connection may wait
	// for its next request.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxHeaderBytes bounds a request's headers.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultBodyTimeout bounds how long a request's body may take to
	// arrive, unless [Options].BodyTimeout says otherwise.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultStreamWriteTimeout bounds how long a write to an event
	// stream may block, unless [Options].StreamWriteTimeout says
	// otherwise.
	DefaultStreamWriteTimeout = 30 * time.Second
)

// CodeTimeout is the code of a request whose body did not arrive within
// the body timeout.
const CodeTimeout = "request_timeout"

// HTTPServer returns an http.Server serving h with the header, idle and
// header-size limits above. It sets no ReadTimeout nor WriteTimeout: the
// event streams last as long as their clients stay, and a read deadline
// that passes while a handler runs cancels its request. The body's
// deadline is set per request by the [Server] instead (see
// [Options].BodyTimeout).
func HTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
	}
}

// requestBody is a request body whose reading is bounded in time: the
// connection's read deadline is set when the request has a body, and
// lifted once the body is read to its end, so that the deadline does not
// cut the connection while the handler works on.
type requestBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done atomic.Bool // the end was read
}

// bound limits r's body to max bytes and, when r has a body, installs
// its deadline, timeout from now.
func bound(w http.ResponseWriter, r *http.Request, max int64, timeout time.Duration) {
	r.Body = http.MaxBytesReader(w, r.Body, max)
	if r.ContentLength == 0 {
		return
	}
	b := &requestBody{ReadCloser: r.Body, rc: http.NewResponseController(w)}
	_ = b.rc.SetReadDeadline(time.Now().Add(timeout))
	r.Body = b
}

func (b *requestBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done.Swap(true) {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = apiError(http.StatusRequestTimeout, CodeTimeout, "the request body did not arrive in time")
	}
	return n, err
}

// refuseBody makes the reply to a request whose body was not read close
// the connection, and the server read no more of it: net/http would
// otherwise read up to 256 KB of the rest, before it writes the reply or
// after, for as long as a slow client makes that last.
func refuseBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// unreadBody reports whether r has a body not read to its end (see
// refuseBody).
func unreadBody(r *http.Request) bool {
	if b, ok := r.Body.(*requestBody); ok {
		return !b.done.Load()
	}
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}
