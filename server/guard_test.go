package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
)

// refusal is a request the server must refuse with status and code and
// without changing anything.
type refusal struct {
	name, method, path, body string
	header                   []string
	status                   int
	code                     string
}

// send sends r to a with its headers only (no Content-Type unless given).
func (r refusal) send(t *testing.T, a *api) (int, server.Error) {
	t.Helper()
	req, err := http.NewRequest(r.method, a.srv.URL+r.path, strings.NewReader(r.body))
	require.NoError(t, err)
	for i := 0; i+1 < len(r.header); i += 2 {
		if r.header[i] == "Host" {
			req.Host = r.header[i+1]
		} else {
			req.Header.Set(r.header[i], r.header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var e server.Error
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	return resp.StatusCode, e
}

// boundAPI is an API whose Options.Addr is its listener's, as vigil serve
// sets it.
func boundAPI(t *testing.T, o server.Options) *api {
	t.Helper()
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), o)
	a.srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	o.Addr = ln.Addr().String()
	s, err := server.New(a.rt, o)
	require.NoError(t, err)
	a.srv = httptest.NewUnstartedServer(s)
	a.srv.Listener = ln
	a.srv.Start()
	t.Cleanup(a.srv.Close)
	return a
}

// A request naming another host (a DNS-rebinding page) is refused with
// 421 before anything else; a POST that is not application/json (a
// CORS-simple form or text/plain post of any page) with 415 before its
// body is read. Neither changes anything.
func TestForeignHostsAndSimplePostsAreRefused(t *testing.T) {
	a := boundAPI(t, server.Options{AllowedHosts: []string{"vigil.example.com", "api.example.com:8443"}})
	_, port, err := net.SplitHostPort(strings.TrimPrefix(a.srv.URL, "http://"))
	require.NoError(t, err)
	id := a.create()
	turn := "/v1/sessions/" + id + "/turns"
	for _, r := range []refusal{
		{name: "a rebinding page lists", method: "GET", path: "/v1/sessions", header: []string{"Host", "attacker.example:" + port}, status: 421, code: server.CodeWrongHost},
		{name: "a rebinding page posts a turn", method: "POST", path: turn, body: `{"prompt":"rm -rf"}`, header: []string{"Host", "attacker.example:" + port, "Content-Type", "application/json"}, status: 421, code: server.CodeWrongHost},
		{name: "a rebinding page creates", method: "POST", path: "/v1/sessions", header: []string{"Host", "attacker.example:" + port, "Content-Type", "application/json"}, status: 421, code: server.CodeWrongHost},
		{name: "health on a foreign host", method: "GET", path: "/healthz", header: []string{"Host", "attacker.example:" + port}, status: 421, code: server.CodeWrongHost},
		{name: "an unknown route on a foreign host", method: "GET", path: "/nope", header: []string{"Host", "attacker.example:" + port}, status: 421, code: server.CodeWrongHost},
		{name: "a preflight on a foreign host", method: "OPTIONS", path: "/v1/sessions", header: []string{"Host", "attacker.example:" + port, "Origin", "http://attacker.example", "Access-Control-Request-Method", "POST"}, status: 421, code: server.CodeWrongHost},
		{name: "loopback at another port", method: "GET", path: "/v1/sessions", header: []string{"Host", "localhost:1"}, status: 421, code: server.CodeWrongHost},
		{name: "a name ending like localhost", method: "GET", path: "/v1/sessions", header: []string{"Host", "localhost.attacker.example:" + port}, status: 421, code: server.CodeWrongHost},
		{name: "an allowed host at another port", method: "GET", path: "/v1/sessions", header: []string{"Host", "api.example.com:" + port}, status: 421, code: server.CodeWrongHost},
		{name: "a text/plain turn", method: "POST", path: turn, body: `{"prompt":"hi"}`, header: []string{"Content-Type", "text/plain"}, status: 415, code: server.CodeUnsupportedMediaType},
		{name: "a form turn", method: "POST", path: turn, body: `prompt=hi`, header: []string{"Content-Type", "application/x-www-form-urlencoded"}, status: 415, code: server.CodeUnsupportedMediaType},
		{name: "a multipart turn", method: "POST", path: turn, body: `{"prompt":"hi"}`, header: []string{"Content-Type", "multipart/form-data; boundary=x"}, status: 415, code: server.CodeUnsupportedMediaType},
		{name: "a turn without a type", method: "POST", path: turn, body: `{"prompt":"hi"}`, status: 415, code: server.CodeUnsupportedMediaType},
		{name: "a create without a type", method: "POST", path: "/v1/sessions", status: 415, code: server.CodeUnsupportedMediaType},
		{name: "a text/plain create", method: "POST", path: "/v1/sessions", body: `{}`, header: []string{"Content-Type", "text/plain;charset=UTF-8"}, status: 415, code: server.CodeUnsupportedMediaType},
		{name: "a cancel without a type", method: "POST", path: "/v1/sessions/" + id + "/cancel", status: 415, code: server.CodeUnsupportedMediaType},
		{name: "a decision as text", method: "POST", path: "/v1/sessions/" + id + "/approvals/c1", body: `{"allow":true}`, header: []string{"Content-Type", "text/plain"}, status: 415, code: server.CodeUnsupportedMediaType},
		{name: "a ticket without a type", method: "POST", path: "/v1/sessions/" + id + "/events/tickets", status: 415, code: server.CodeUnsupportedMediaType},
		{name: "a JSON-ish type", method: "POST", path: turn, body: `{"prompt":"hi"}`, header: []string{"Content-Type", "application/json-patch+json"}, status: 415, code: server.CodeUnsupportedMediaType},
	} {
		t.Run(r.name, func(t *testing.T) {
			status, e := r.send(t, a)
			assert.Equal(t, r.status, status, "%+v", e)
			assert.Equal(t, r.code, e.Code)
			assert.NotEmpty(t, e.Message)
		})
	}
	// Nothing changed: the one session, no job, no event.
	var list struct{ Sessions []server.SessionInfo }
	a.json(http.StatusOK, "GET", "/v1/sessions", "", &list)
	assert.Len(t, list.Sessions, 1)
	var sum server.Summary
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
	assert.Empty(t, sum.Jobs)
	assert.Zero(t, sum.Events)

	// Served: the bound address's names, the allowed hosts, JSON with a
	// charset.
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST.:" + port, "[::1]:" + port,
		"vigil.example.com", "vigil.example.com:443", "api.example.com:8443"} {
		status, body := a.do("GET", "/healthz", "", "Host", host)
		assert.Equal(t, http.StatusOK, status, "%s: %s", host, body)
	}
	status, body := a.do("POST", turn, `{"prompt":"hi"}`, "Content-Type", "application/json; charset=utf-8")
	assert.Equal(t, http.StatusAccepted, status, "%s", body)
}

// The 415 comes before the body is read: a client that declares a body
// and never sends it gets its answer at once.
func TestASimplePostIsAnsweredBeforeItsBody(t *testing.T) {
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.srv.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = fmt.Fprintf(conn, "POST /v1/sessions HTTP/1.1\r\nHost: %s\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n{", strings.TrimPrefix(a.srv.URL, "http://"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "answered before the body")
	defer resp.Body.Close()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
}
