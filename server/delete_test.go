package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// syncBuffer is a log output read while the server writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loggedAPI is an api whose runtime and server log, as JSON, to the
// buffer returned.
func loggedAPI(t *testing.T) (*api, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	logger := hclog.New(&hclog.LoggerOptions{Output: out, JSONFormat: true, Level: hclog.Info})
	rt, err := vigil.Open(context.Background(), composition(false, scripted.Reply{Text: "fine"}), vigil.WithLogger(logger))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	s, err := server.New(rt, server.Options{Auth: peopleAuth(t), Logger: logger})
	require.NoError(t, err)
	a := &api{t: t, rt: rt, srv: httptest.NewServer(s)}
	t.Cleanup(a.srv.Close)
	t.Cleanup(a.stopWorker)
	return a, out
}

// A tenant's user deletes its session: every route that names it is 404
// afterwards, the list leaves it out, and the process log says who
// deleted it. A viewer may not; another tenant's user is told there is
// no such session.
func TestDeleteASession(t *testing.T) {
	a, logged := loggedAPI(t)
	a.auth = tokenOf("acme-user")
	id := a.create()
	a.startWorker()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"hi"}`, nil)
	a.until(id, -1, turnEnd)
	a.auth = tokenOf("globex-user")
	theirs := a.create()

	for tok, want := range map[string]int{"acme-viewer": http.StatusForbidden, "globex-user": http.StatusNotFound, "globex-none": http.StatusNotFound} {
		a.auth = tokenOf(tok)
		got, body := a.do("DELETE", "/v1/sessions/"+id, "")
		assert.Equal(t, want, got, "%s: %s", tok, body)
	}
	_, err := a.rt.Session(context.Background(), id)
	require.NoError(t, err, "nothing deleted by those refused")

	a.auth = tokenOf("acme-user")
	var out server.Deleted
	a.json(http.StatusOK, "DELETE", "/v1/sessions/"+id, "", &out)
	assert.Equal(t, []string{id}, out.Deleted)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "", ""},
		{"DELETE", "", ""},
		{"GET", "/events", ""},
		{"GET", "/verify", ""},
		{"POST", "/turns", `{"prompt":"again"}`},
		{"POST", "/cancel", ""},
		{"POST", "/events/tickets", ""},
		{"POST", "/approvals/call_1", `{"allow":true}`},
	} {
		got, body := a.do(c.method, "/v1/sessions/"+id+c.path, c.body)
		require.Equal(t, http.StatusNotFound, got, "%s %s: %s", c.method, c.path, body)
		var e server.Error
		require.NoError(t, json.Unmarshal(body, &e))
		assert.Equal(t, server.CodeNotFound, e.Code)
	}
	var list struct{ Sessions []server.SessionInfo }
	a.auth = tokenOf("admin")
	a.json(http.StatusOK, "GET", "/v1/sessions", "", &list)
	require.Len(t, list.Sessions, 1)
	assert.Equal(t, theirs, list.Sessions[0].ID, "another tenant's session is kept")

	var line map[string]any
	for l := range strings.SplitSeq(logged.String(), "\n") {
		if strings.Contains(l, `"deleted a session"`) {
			require.NoError(t, json.Unmarshal([]byte(l), &line))
		}
	}
	require.NotNil(t, line, "the deletion is in the process log:\n%s", logged.String())
	assert.Equal(t, id, line["session"])
	assert.Equal(t, "user@acme", line["by"])
	assert.Equal(t, "acme", line["tenant"])
}

// Ids with bytes no session id has are 400 before any store is asked;
// nothing is deleted.
func TestDeleteRefusesOddIDs(t *testing.T) {
	a, _ := loggedAPI(t)
	a.auth = tokenOf("admin")
	id := a.create()
	for _, odd := range []string{"%00", "a.b", "..%2F" + id, id + "%0A", "%C3%A9", strings.Repeat("a", 129), "a%20b"} {
		got, body := a.do("DELETE", "/v1/sessions/"+odd, "")
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, got, "%s: %s", odd, body)
	}
	got, _ := a.do("DELETE", "/v1/sessions/"+url.PathEscape("a.b"), "")
	assert.Equal(t, http.StatusBadRequest, got)
	_, err := a.rt.Session(context.Background(), id)
	require.NoError(t, err)
}

// A session with a sub-agent's child session is deleted only with it
// (tree=true); a fork of it lives on.
func TestDeleteTreeOverTheAPI(t *testing.T) {
	ctx := context.Background()
	a, _ := loggedAPI(t)
	a.auth = tokenOf("acme-user")
	id := a.create()
	mgr, err := a.rt.Manager()
	require.NoError(t, err)
	child, err := mgr.CreateChild(ctx, session.Parent{ID: id, Seq: 0, Call: "call_1"})
	require.NoError(t, err)
	require.NoError(t, child.Close(ctx))
	var fork server.Summary
	a.json(http.StatusCreated, "POST", "/v1/sessions", `{"fork":{"session":"`+id+`","at":-1}}`, &fork)

	var e server.Error
	a.json(http.StatusConflict, "DELETE", "/v1/sessions/"+id, "", &e)
	assert.Equal(t, server.CodeConflict, e.Code)
	assert.Contains(t, e.Message, "child")
	var out server.Deleted
	a.json(http.StatusOK, "DELETE", "/v1/sessions/"+id+"?tree=true", "", &out)
	assert.Equal(t, []string{child.ID(), id}, out.Deleted)
	a.json(http.StatusOK, "GET", "/v1/sessions/"+fork.ID, "", nil)
}

// A follower attached to a session's stream when it is deleted is told,
// by an error event of code not_found, and its stream ends.
func TestDeleteEndsAnAttachedStream(t *testing.T) {
	a, _ := loggedAPI(t)
	a.auth = tokenOf("acme-user")
	id := a.create()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", a.srv.URL+"/v1/sessions/"+id+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+a.auth)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	a.json(http.StatusOK, "DELETE", "/v1/sessions/"+id, "", nil)
	sc := bufio.NewScanner(resp.Body)
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok && event == "error" {
			data = v
		}
	}
	require.NoError(t, ctx.Err(), "the stream ended on its own")
	assert.Equal(t, "error", event)
	var e server.Error
	require.NoError(t, json.Unmarshal([]byte(data), &e), "%q", data)
	assert.Equal(t, server.CodeNotFound, e.Code)
}
