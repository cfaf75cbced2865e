package providertest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted HTTP response.
type Reply struct {
	// Status defaults to 200.
	Status int
	// Header is added to the response. A 200 reply without a content type
	// is sent as text/event-stream.
	Header http.Header
	// Body is written as is, except that a text/event-stream body is
	// written one event (up to and including its blank line) at a time,
	// flushed after each.
	Body []byte
	// Hold keeps the response open after Body until the client goes away,
	// the way a model that is still thinking does.
	Hold bool
	// Repeat, when set, is written after Body again and again, flushed
	// each time, until the client goes away: a stream that never ends.
	Repeat []byte
}

// Request is what the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Server is an httptest server that answers the n-th request with the
// n-th reply. A request beyond the script fails the test.
type Server struct {
	*httptest.Server
	t testing.TB

	mu      sync.Mutex
	replies []Reply
	reqs    []Request
	handled int           // handlers that returned
	tick    chan struct{} // closed and replaced when handled grows
}

// NewServer starts a server for the replies; it is closed when the test
// ends.
func NewServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{t: t, replies: replies, tick: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Requests returns a copy of the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// WaitHandled waits until n handlers in all have returned, or fails the
// test after timeout. A held reply's handler returns only once the client
// closed the connection, so this proves a stream was abandoned.
func (s *Server) WaitHandled(n int, timeout time.Duration) {
	s.t.Helper()
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		handled, tick := s.handled, s.tick
		s.mu.Unlock()
		if handled >= n {
			return
		}
		select {
		case <-tick:
		case <-deadline:
			s.t.Fatalf("providertest: %d of %d handlers returned after %v", handled, n, timeout)
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	defer func() {
		s.mu.Lock()
		s.handled++
		close(s.tick)
		s.tick = make(chan struct{})
		s.mu.Unlock()
	}()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("providertest: reading request body: %v", err)
	}
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var rep Reply
	ok := n < len(s.replies)
	if ok {
		rep = s.replies[n]
	}
	s.mu.Unlock()
	if !ok {
		s.t.Errorf("providertest: unexpected request %d: %s %s", n+1, r.Method, r.URL.Path)
		http.Error(w, "unexpected request", http.StatusTeapot)
		return
	}

	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status == http.StatusOK && w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.WriteHeader(status)
	flusher, _ := w.(http.Flusher)
	if w.Header().Get("Content-Type") == "text/event-stream" {
		for _, ev := range events(rep.Body) {
			if _, err := w.Write(ev); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	} else if _, err := w.Write(rep.Body); err != nil {
		return
	}
	if flusher != nil {
		flusher.Flush()
	}
	for len(rep.Repeat) > 0 {
		if _, err := w.Write(rep.Repeat); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	if rep.Hold {
		<-r.Context().Done()
	}
}

// events splits a server-sent event stream after each blank line, keeping
// every byte.
func events(sse []byte) [][]byte {
	var out [][]byte
	for len(sse) > 0 {
		i := bytes.Index(sse, []byte("\n\n"))
		if i < 0 {
			out = append(out, sse)
			break
		}
		out = append(out, sse[:i+2])
		sse = sse[i+2:]
	}
	return out
}

// ReadFile returns the contents of a fixture, failing the test if it
// cannot be read.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("providertest: %v", err)
	}
	return b
}
