package webui

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// Prefix is the path the UI is served under.
const Prefix = "/ui/"

// Config is what the page learns from /ui/config.json.
type Config struct {
	// OIDC, when set, offers an OpenID Connect login besides a pasted token.
	OIDC *OIDC `json:"oidc,omitempty"`
}

// OIDC is the OpenID Connect login of the page: an authorization-code
// flow with PKCE, as a public client (no secret: a page keeps none). The
// ID token it gets is the bearer the API checks, so ClientID must be the
// audience the API's OpenID Connect authenticator expects.
type OIDC struct {
	Issuer   string   `json:"issuer"`
	ClientID string   `json:"client_id"`
	Scopes   []string `json:"scopes"`
}

// DefaultScopes are the scopes asked for when [OIDC].Scopes is empty.
var DefaultScopes = []string{"openid", "profile", "email"}

// csp allows the page its own scripts, styles, images and API calls, and
// nothing else: no inline script or style, no plugin, no framing by
// another page. The issuer's token endpoint is called from the page in
// the OpenID Connect login, so its origin is allowed to connect too.
func csp(c Config) string {
	connect := "'self'"
	if c.OIDC != nil {
		if o := origin(c.OIDC.Issuer); o != "" {
			connect += " " + o
		}
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src " + connect +
		"; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// origin is the scheme://host[:port] of an issuer URL, or "" when it is
// not an http(s) URL (which the page then cannot call either).
func origin(u string) string {
	for _, scheme := range []string{"https://", "http://"} {
		if rest, ok := strings.CutPrefix(u, scheme); ok {
			host, _, _ := strings.Cut(rest, "/")
			if host == "" || strings.ContainsAny(host, " ;'\"") {
				return ""
			}
			return scheme + host
		}
	}
	return ""
}

// Handler serves the UI: GET /ui/ (the page), its assets and
// /ui/config.json. Mount it at [Prefix]. A path that names no asset is a
// 404: hash routes (#/sessions/…) never reach the server.
func Handler(c Config) http.Handler {
	if c.OIDC != nil && len(c.OIDC.Scopes) == 0 {
		o := *c.OIDC
		o.Scopes = DefaultScopes
		c.OIDC = &o
	}
	conf, _ := json.Marshal(c) // plain strings: cannot fail
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	index, _ := fs.ReadFile(sub, "index.html") // embedded: present
	policy := csp(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		switch {
		case name == "config.json":
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "no-store")
			_, _ = w.Write(conf)
			return
		case name == "" || name == "index.html":
			name = "index.html"
		case strings.HasSuffix(name, "/") || !known(sub, name):
			// No directory listings, no guessing.
			http.NotFound(w, r)
			return
		}
		h.Set("Cache-Control", "no-cache")
		if name == "index.html" {
			// FileServer would redirect /index.html to ./: write it here.
			h.Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(index)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	})
}

// known reports whether name is a file of the UI.
func known(fsys fs.FS, name string) bool {
	if !fs.ValidPath(name) || path.Clean(name) != name {
		return false
	}
	st, err := fs.Stat(fsys, name)
	return err == nil && !st.IsDir()
}
