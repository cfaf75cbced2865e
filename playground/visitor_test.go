package playground

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is the playground's clock in tests of expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// withClock makes s read the time from a fake clock.
func withClock(s *Server) *fakeClock {
	c := &fakeClock{t: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	s.vmu.Lock()
	s.now = c.now
	s.vmu.Unlock()
	return c
}

// known reports whether the playground still keeps visitor v: its
// requests are answered rather than refused as an unknown visitor's.
func known(t *testing.T, v visited) bool {
	t.Helper()
	rec := post(t, v, "/api/control", map[string]string{"op": opPause})
	if rec.Code == http.StatusNotFound {
		assert.Contains(t, rec.Body.String(), "no such visitor")
		return false
	}
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return true
}

func TestEveryVisitorHasItsOwnDemo(t *testing.T) {
	s := newPlayground(t, Options{})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { require.NoError(t, s.Close()) }) // ends the streams before srv.Close waits for them
	a := visit(t, s)
	first := finishDemo(t, a)

	// A second page load: a visitor with nothing shown, not the first
	// visitor's sessions.
	b := visit(t, s)
	events := dialEvents(t, srv.URL+"/api/events?visitor="+b.id)
	var hi hello
	require.NoError(t, json.Unmarshal(events.until("hello").data, &hi))
	assert.Empty(t, hi.Sessions, "a new visitor sees no other visitor's session")
	assert.Equal(t, stateIdle, hi.Play.State)
	assert.Empty(t, hi.Play.Session)

	// Nor can it act on them.
	rec := httptest.NewRecorder()
	b.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost/api/sessions/"+first, nil))
	assert.Equal(t, http.StatusNotFound, rec.Code)
	for _, path := range []string{"/api/send", "/api/replay", "/api/verify", "/api/decide"} {
		got := decodeBody[map[string]string](t, post(t, b, path, sessionBody{Session: first}), http.StatusNotFound)
		assert.Contains(t, got["error"], "no such session", path)
	}

	// Its own demo is another session, compacted like the first, and
	// nothing of it reaches the first visitor's page.
	aEvents, cancel := a.hub.subscribe()
	defer cancel()
	second := finishDemo(t, b)
	assert.NotEqual(t, first, second)
	assert.Len(t, recordsOf(t, b, second), 52, "the compaction runs on every visitor's demo")
	assert.Equal(t, 1, len(aEvents), "the first visitor got its hello and nothing of the second's demo")
	_, shown := a.hub.records(second)
	assert.False(t, shown)
	assert.Len(t, recordsOf(t, a, first), 52)

	// A reset is the visitor's own too.
	decodeBody[playState](t, post(t, b, "/api/control", map[string]string{"op": opReset}), http.StatusOK)
	assert.Len(t, recordsOf(t, a, first), 52, "another visitor's reset leaves the demo")
	_, ok := s.mgr.Get(first)
	assert.True(t, ok, "and its session open")
	_, ok = s.mgr.Get(second)
	assert.False(t, ok, "the visitor's own sessions are closed")
}

func TestUnknownVisitorsAreRefused(t *testing.T) {
	s := newPlayground(t, Options{})
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/api/events"},
		{http.MethodGet, "/api/events?visitor=nope"},
		{http.MethodGet, "/api/sessions/x?visitor=nope"},
		{http.MethodPost, "/api/control?visitor=nope"},
		{http.MethodPost, "/api/send"},
		{http.MethodPost, "/api/fork?visitor="},
		{http.MethodPost, "/api/replay?visitor=nope"},
		{http.MethodPost, "/api/verify?visitor=nope"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://localhost"+tc.path, nil)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			got := decodeBody[map[string]string](t, rec, http.StatusNotFound)
			assert.Contains(t, got["error"], "no such visitor")
		})
	}
}

func TestIdleVisitorsExpire(t *testing.T) {
	s := newPlayground(t, Options{})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	clock := withClock(s)

	gone := visit(t, s)
	demo := finishDemo(t, gone)
	busy := visit(t, s)
	events := dialEvents(t, srv.URL+"/api/events?visitor="+busy.id)
	events.until("hello")
	active := visit(t, s)

	clock.advance(visitorIdle - time.Minute)
	require.True(t, known(t, active), "a request keeps a visitor")
	clock.advance(2 * time.Minute)
	s.sweep()

	assert.False(t, known(t, gone), "idle for longer than visitorIdle, without a page open")
	_, open := s.mgr.Get(demo)
	assert.False(t, open, "its sessions are closed")
	assert.True(t, known(t, busy), "an open event stream keeps a visitor, however long")
	assert.True(t, known(t, active))
	s.vmu.Lock()
	assert.Len(t, s.visitors, 2)
	assert.NotContains(t, s.owners, demo, "nothing routes commits to it any more")
	s.vmu.Unlock()

	// Once its page is gone, an open page's visitor ages like any other.
	require.NoError(t, events.resp.Body.Close())
	require.Eventually(t, func() bool {
		s.vmu.Lock()
		defer s.vmu.Unlock()
		return busy.streams == 0
	}, 10*time.Second, time.Millisecond, "the server sees the stream end")
	clock.advance(visitorIdle + time.Minute)
	s.sweep()
	assert.False(t, known(t, busy))
	assert.False(t, known(t, active))
}

func TestVisitorsAreBounded(t *testing.T) {
	s := newPlayground(t, Options{})
	clock := withClock(s)
	all := make([]visited, maxVisitors)
	for i := range all {
		all[i] = visit(t, s)
		clock.advance(time.Second)
	}
	// The oldest is touched, so the second oldest is the least recently
	// seen one: the one a new visitor evicts.
	require.True(t, known(t, all[0]))
	extra := visit(t, s)
	assert.True(t, known(t, all[0]))
	assert.False(t, known(t, all[1]), "evicted: the least recently seen")
	assert.True(t, known(t, extra))
	s.vmu.Lock()
	assert.Len(t, s.visitors, maxVisitors)
	// Every page open: none may be evicted, and a new one is refused.
	for _, v := range s.visitors {
		v.streams++
	}
	s.vmu.Unlock()
	got := decodeBody[map[string]string](t, post(t, s, "/api/visitor", struct{}{}), http.StatusServiceUnavailable)
	assert.Contains(t, got["error"], "too many open pages")
	s.vmu.Lock()
	for _, v := range s.visitors {
		v.streams--
	}
	s.vmu.Unlock()
}
