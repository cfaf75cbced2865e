package playground

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// newPlayground returns a playground closed when the test ends.
func newPlayground(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Delay == 0 {
		opts.Delay = time.Millisecond
	}
	s, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// visited is a playground as one visitor sees it: its requests name the
// visitor, and the visitor's hub and player are at hand.
type visited struct {
	*Server
	*visitor
}

// ServeHTTP serves r as the visitor's.
func (v visited) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	q.Set("visitor", v.id)
	r.URL.RawQuery = q.Encode()
	v.Server.ServeHTTP(w, r)
}

// visit makes a visitor of s, as the page does when it loads.
func visit(t *testing.T, s *Server) visited {
	t.Helper()
	id := decodeBody[map[string]string](t, post(t, s, "/api/visitor", struct{}{}), http.StatusOK)["visitor"]
	require.NotEmpty(t, id)
	s.vmu.Lock()
	v := s.visitors[id]
	s.vmu.Unlock()
	require.NotNil(t, v)
	return visited{s, v}
}

// newVisited returns a playground closed when the test ends, seen by one
// visitor.
func newVisited(t *testing.T, opts Options) visited {
	t.Helper()
	return visit(t, newPlayground(t, opts))
}

// post sends a JSON action to the playground's handler.
func post(t *testing.T, h http.Handler, path string, body any) *httptest.ResponseRecorder {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, "http://localhost"+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// decodeBody decodes a recorded JSON answer, requiring status.
func decodeBody[T any](t *testing.T, rec *httptest.ResponseRecorder, status int) T {
	t.Helper()
	require.Equal(t, status, rec.Code, rec.Body.String())
	var v T
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v), rec.Body.String())
	return v
}

// finishDemo runs the demo to its end, allowing its calc call, and
// returns its session id.
func finishDemo(t *testing.T, s visited) string {
	t.Helper()
	id := waitDemo(t, s)
	allow(t, s, id)
	require.Eventually(t, func() bool { return s.hub.playState().State == stateDone }, 10*time.Second, 5*time.Millisecond,
		"the demo did not finish: %+v", s.hub.playState())
	return id
}

// allow allows the call the session shown waits for.
func allow(t *testing.T, s visited, id string) decideResult {
	t.Helper()
	return decodeBody[decideResult](t, post(t, s, "/api/decide", decideRequest{Session: id, Call: pendingCall(t, s, id).ID, Allow: true}), http.StatusOK)
}

// waitDemo runs the demo to its calc call, which waits for a decision,
// and returns its session id.
func waitDemo(t *testing.T, s visited) string {
	t.Helper()
	ps := decodeBody[playState](t, post(t, s, "/api/control", map[string]string{"op": opFinish}), http.StatusOK)
	require.NotEmpty(t, ps.Session)
	require.Eventually(t, func() bool { return s.hub.playState().State == stateWaiting }, 10*time.Second, 5*time.Millisecond,
		"the demo did not wait for a decision: %+v", s.hub.playState())
	return ps.Session
}

// pendingCall returns the only call the session shown waits for.
func pendingCall(t *testing.T, s visited, id string) pendingView {
	t.Helper()
	sv, ok := s.hub.snapshot(id)
	require.True(t, ok, "session %s is not shown", id)
	require.NotNil(t, sv.State.Suspended, "session %s is not suspended", id)
	require.Len(t, sv.State.Suspended.Calls, 1)
	return sv.State.Suspended.Calls[0]
}

// recordsOf returns the records of a session the page shows.
func recordsOf(t *testing.T, s visited, id string) []session.Record {
	t.Helper()
	v, ok := s.hub.records(id)
	require.True(t, ok, "session %s is not shown", id)
	return v.records
}

// seqOf returns the seq of the only record of the session that matches.
func seqOf(t *testing.T, s visited, id string, match func(session.Record) bool) int64 {
	t.Helper()
	var found []int64
	for _, r := range recordsOf(t, s, id) {
		if match(r) {
			found = append(found, r.Seq())
		}
	}
	require.Len(t, found, 1, "records matching")
	return found[0]
}

// userMessage matches the user/message with that content.
func userMessage(content string) func(session.Record) bool {
	return func(r session.Record) bool {
		if r.Type() != session.TypeUserMessage {
			return false
		}
		m, err := session.DecodeData[session.UserMessage](r)
		return err == nil && m.Content == content
	}
}

// ofType matches the records of a type in a turn and step.
func ofType(typ string, turn, step int) func(session.Record) bool {
	return func(r session.Record) bool { return r.Type() == typ && r.Turn() == turn && r.Step() == step }
}

// sse is a client of the page's event stream.
type sse struct {
	t    *testing.T
	resp *http.Response
	sc   *bufio.Scanner
}

type sseEvent struct {
	name string
	data []byte
}

// dialEvents opens the event stream at url (…/api/events?visitor=ID).
func dialEvents(t *testing.T, url string) *sse {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	return &sse{t: t, resp: resp, sc: sc}
}

// next returns the next named event, skipping comments and retry lines.
func (c *sse) next() sseEvent {
	c.t.Helper()
	var ev sseEvent
	for c.sc.Scan() {
		line := c.sc.Text()
		switch {
		case line == "":
			if ev.name != "" {
				return ev
			}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = []byte(strings.TrimPrefix(line, "data: "))
		}
	}
	require.NoError(c.t, c.sc.Err())
	c.t.Fatal("the event stream ended")
	return ev
}

// until returns the next event called name, skipping others.
func (c *sse) until(name string) sseEvent {
	c.t.Helper()
	for {
		if ev := c.next(); ev.name == name {
			return ev
		}
	}
}
