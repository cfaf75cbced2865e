package webui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/webui"
)

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w
}

func TestHandlerServesTheAssetsUnderAStrictPolicy(t *testing.T) {
	h := webui.Handler(webui.Config{})
	for _, tc := range []struct {
		path, contentType, contains string
	}{
		{"/ui/", "text/html; charset=utf-8", `<script type="module" src="js/app.js">`},
		{"/ui/index.html", "text/html; charset=utf-8", `<main id="main"`},
		{"/ui/app.css", "text/css; charset=utf-8", ":focus-visible"},
		{"/ui/js/app.js", "text/javascript; charset=utf-8", "hashchange"},
		{"/ui/config.json", "application/json", "{}"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			w := get(t, h, http.MethodGet, tc.path)
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, tc.contentType, w.Header().Get("Content-Type"))
			assert.Contains(t, w.Body.String(), tc.contains)
			csp := w.Header().Get("Content-Security-Policy")
			assert.Contains(t, csp, "default-src 'self'")
			assert.Contains(t, csp, "frame-ancestors 'none'")
			assert.NotContains(t, csp, "unsafe-inline")
			assert.NotContains(t, csp, "unsafe-eval")
			assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
			assert.Equal(t, "DENY", w.Header().Get("X-Frame-Options"))
		})
	}
}

// The page's policy forbids inline script and style, so the page must
// hold none: every script and style is a file of its own.
func TestThePageHoldsNoInlineScriptOrStyle(t *testing.T) {
	body := get(t, webui.Handler(webui.Config{}), http.MethodGet, "/ui/").Body.String()
	assert.NotRegexp(t, `<script(?:\s+type="module")?>`, body)
	assert.NotContains(t, body, "<style")
	assert.NotContains(t, body, " style=")
	assert.NotRegexp(t, `\son[a-z]+=`, body, "no inline event handlers")
}

func TestHandlerRefusesWhatIsNoAsset(t *testing.T) {
	h := webui.Handler(webui.Config{})
	for _, path := range []string{"/ui/js/", "/ui/nope.js", "/ui/../webui.go", "/ui/js/../../webui.go", "/ui/static/index.html", "/ui//app.css", "/elsewhere"} {
		assert.Equal(t, http.StatusNotFound, get(t, h, http.MethodGet, path).Code, path)
	}
	w := get(t, h, http.MethodPost, "/ui/")
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	assert.Equal(t, "GET, HEAD", w.Header().Get("Allow"))
}

func TestConfigNamesTheOpenIDConnectLogin(t *testing.T) {
	h := webui.Handler(webui.Config{OIDC: &webui.OIDC{Issuer: "https://id.example.com/realms/x", ClientID: "vigil-ui"}})
	w := get(t, h, http.MethodGet, "/ui/config.json")
	var c webui.Config
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &c))
	require.NotNil(t, c.OIDC)
	assert.Equal(t, webui.OIDC{Issuer: "https://id.example.com/realms/x", ClientID: "vigil-ui", Scopes: webui.DefaultScopes}, *c.OIDC)
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	// The page trades the code at the issuer: its origin, and only it,
	// may be connected to besides the API.
	csp := w.Header().Get("Content-Security-Policy")
	assert.Contains(t, csp, "connect-src 'self' https://id.example.com;")
	// An issuer that is no URL adds nothing to the policy.
	w = get(t, webui.Handler(webui.Config{OIDC: &webui.OIDC{Issuer: "https://a.example; script-src *", ClientID: "x"}}), http.MethodGet, "/ui/config.json")
	assert.True(t, strings.HasPrefix(w.Header().Get("Content-Security-Policy"), "default-src 'self'"))
	assert.Contains(t, w.Header().Get("Content-Security-Policy"), "connect-src 'self';")
}

// The server serves the UI to anyone (the page holds no secret; its
// requests carry the person's token), but only under a Host it answers.
func TestTheServerMountsTheUIBehindItsHostCheck(t *testing.T) {
	s := newStack(t)
	resp, err := http.Get(s.url + "/ui/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "no token needed for the page")
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'")
	resp, err = http.Get(s.url + "/ui")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "/ui redirects to /ui/")
	assert.Equal(t, "/ui/", resp.Request.URL.Path)
	req, err := http.NewRequest(http.MethodGet, s.url+"/ui/", nil)
	require.NoError(t, err)
	req.Host = "evil.example:80"
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode, "a rebinding page's Host is refused")
	// The API behind it still wants a token.
	assert.Equal(t, http.StatusUnauthorized, s.call("", "GET", "/v1/sessions", "", nil))
}
