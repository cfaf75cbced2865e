package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memoryServeConfig is a composition for vigil serve that needs nothing
// outside the process.
const memoryServeConfig = `plugins:
  - { name: store/memory }
  - { name: provider/scripted, config: { script: [ { text: "ok" } ], repeat: true } }
  - { name: agent }
`

// TestServeRefusesWhatAWebPageCouldSend runs the real binary on its
// default (loopback) address: a Host that names another server (a
// DNS-rebinding page) is 421 wrong_host, a POST that is not JSON (a
// CORS-simple form or text/plain post) is 415 unsupported_media_type,
// and neither creates anything; the bound address's names and
// --allowed-host are served.
func TestServeRefusesWhatAWebPageCouldSend(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(memoryServeConfig), 0o644))
	s := serve(t, dir, "tok", "--allowed-host", "vigil.example.com")
	u, err := url.Parse(s.base)
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	send := func(method, path, host, ctype, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, s.base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+s.token)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var e struct{ Code string }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Code
	}
	for _, tc := range []struct {
		method, host, ctype string
		status              int
		code                string
	}{
		{"GET", "attacker.example:" + port, "", 421, "wrong_host"},
		{"POST", "attacker.example:" + port, "application/json", 421, "wrong_host"},
		{"GET", "localhost:1", "", 421, "wrong_host"},
		{"POST", u.Host, "text/plain", 415, "unsupported_media_type"},
		{"POST", u.Host, "application/x-www-form-urlencoded", 415, "unsupported_media_type"},
		{"POST", u.Host, "", 415, "unsupported_media_type"},
		{"GET", "localhost:" + port, "", 200, ""},
		{"GET", "[::1]:" + port, "", 200, ""},
		{"GET", "vigil.example.com", "", 200, ""},
	} {
		status, code := send(tc.method, "/v1/sessions", tc.host, tc.ctype, "{}")
		assert.Equal(t, tc.status, status, "%s Host %s %s", tc.method, tc.host, tc.ctype)
		assert.Equal(t, tc.code, code, "%s Host %s %s", tc.method, tc.host, tc.ctype)
	}
	var list struct{ Sessions []json.RawMessage }
	s.call(http.StatusOK, "GET", "/v1/sessions", "", &list)
	assert.Empty(t, list.Sessions, "nothing was created")
	s.call(http.StatusCreated, "POST", "/v1/sessions", "", nil)
	s.stop()
}
