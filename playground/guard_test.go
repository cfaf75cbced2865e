package playground

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGuardRefusesOtherSites sends real requests to a served playground
// with the Host and Origin headers a DNS-rebinding page or a page of
// another site would make the browser send, and those of the page itself.
func TestGuardRefusesOtherSites(t *testing.T) {
	pg := newVisited(t, Options{Hosts: []string{"demo.lan", "192.168.1.20"}})
	srv := httptest.NewServer(pg)
	t.Cleanup(srv.Close)
	_, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	port := ":" + p
	for _, tc := range []struct {
		name, method, path, host, origin string
		status                           int
		error                            string
	}{
		// Refused.
		{name: "rebinding page loads the page", method: "GET", path: "/", host: "evil.example" + port, status: 403, error: `host "evil.example` + port + `" is not served here`},
		{name: "rebinding page reads the events", method: "GET", path: "/api/events", host: "evil.example" + port, status: 403, error: "is not served here"},
		{name: "rebinding page reads a session", method: "GET", path: "/api/sessions/x", host: "evil.example", status: 403, error: "is not served here"},
		{name: "rebinding page plays", method: "POST", path: "/api/control", host: "evil.example" + port, origin: "http://evil.example" + port, status: 403, error: "is not served here"},
		{name: "a name ending like localhost", method: "GET", path: "/", host: "localhost.evil.example" + port, status: 403, error: "is not served here"},
		{name: "a subdomain of localhost", method: "GET", path: "/", host: "evil.localhost" + port, status: 403, error: "is not served here"},
		{name: "another page makes a visitor", method: "POST", path: "/api/visitor", host: "127.0.0.1" + port, origin: "http://evil.example", status: 403, error: "may not act"},
		{name: "another page posts a control", method: "POST", path: "/api/control", host: "127.0.0.1" + port, origin: "http://evil.example", status: 403, error: `origin "http://evil.example" may not act`},
		{name: "another page posts a send", method: "POST", path: "/api/send", host: "127.0.0.1" + port, origin: "http://evil.example", status: 403, error: "may not act"},
		{name: "another page posts a decision", method: "POST", path: "/api/decide", host: "127.0.0.1" + port, origin: "http://evil.example", status: 403, error: "may not act"},
		{name: "another page posts a fork", method: "POST", path: "/api/fork", host: "localhost" + port, origin: "https://evil.example", status: 403, error: "may not act"},
		{name: "a sandboxed page", method: "POST", path: "/api/control", host: "127.0.0.1" + port, origin: "null", status: 403, error: `origin "null" may not act`},
		{name: "another local port", method: "POST", path: "/api/control", host: "127.0.0.1" + port, origin: "http://127.0.0.1:1", status: 403, error: "may not act"},
		{name: "another loopback name", method: "POST", path: "/api/control", host: "127.0.0.1" + port, origin: "http://localhost" + port, status: 403, error: "may not act"},
		{name: "a PUT from another page", method: "PUT", path: "/", host: "127.0.0.1" + port, origin: "http://evil.example", status: 403, error: "may not act"},
		{name: "a DELETE from another page", method: "DELETE", path: "/api/sessions/x", host: "127.0.0.1" + port, origin: "http://evil.example", status: 403, error: "may not act"},

		// Served.
		{name: "the page", method: "GET", path: "/", host: "127.0.0.1" + port, status: 200},
		{name: "the page on localhost", method: "GET", path: "/", host: "localhost" + port, status: 200},
		{name: "the page on localhost, no port", method: "GET", path: "/", host: "localhost", status: 200},
		{name: "the page on LOCALHOST.", method: "GET", path: "/", host: "LOCALHOST." + port, status: 200},
		{name: "the page on [::1]", method: "GET", path: "/", host: "[::1]" + port, status: 200},
		{name: "the page on 127.0.0.1, no port", method: "GET", path: "/", host: "127.0.0.1", status: 200},
		{name: "the page on a host it was given", method: "GET", path: "/", host: "demo.lan" + port, status: 200},
		{name: "the page on an address it was given", method: "GET", path: "/", host: "192.168.1.20" + port, status: 200},
		{name: "the page's own control", method: "POST", path: "/api/control", host: "127.0.0.1" + port, origin: "http://127.0.0.1" + port, status: 200},
		{name: "the page's own control on localhost", method: "POST", path: "/api/control", host: "localhost" + port, origin: "http://localhost" + port, status: 200},
		{name: "the page's own control on a host it was given", method: "POST", path: "/api/control", host: "demo.lan" + port, origin: "http://demo.lan" + port, status: 200},
		{name: "a control without an origin (curl)", method: "POST", path: "/api/control", host: "127.0.0.1" + port, status: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body *strings.Reader
			if tc.method == "POST" {
				body = strings.NewReader(`{"op":"pause"}`) // a no-op while idle
			} else {
				body = strings.NewReader("")
			}
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, body)
			require.NoError(t, err)
			req.Host = tc.host
			req.Header.Set("Content-Type", "application/json")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
			if tc.error != "" {
				var got map[string]string
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
				assert.Contains(t, got["error"], tc.error)
			}
		})
	}
	t.Run("no host", func(t *testing.T) {
		// net/http's client always sends one: write an HTTP/1.0 request
		// without it.
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
	assert.Equal(t, stateIdle, pg.hub.playState().State, "nothing refused drove the player")
}
