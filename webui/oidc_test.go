package webui_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/internal/browsertest"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/webui"
)

// issuer is an OpenID Connect issuer over real HTTP that logs everyone in
// as ann at once: its authorization endpoint redirects back with a code,
// and its token endpoint trades the code for a signed ID token only with
// the PKCE verifier of the challenge, the client and the redirect URI the
// code was issued for, as a public client's exchange requires.
type issuer struct {
	t     *testing.T
	srv   *httptest.Server
	key   *rsa.PrivateKey
	mu    sync.Mutex
	codes map[string]grant
	// refused counts token requests refused.
	refused int
}

type grant struct{ challenge, client, redirect, nonce string }

const clientID = "vigil-ui"

func newIssuer(t *testing.T) *issuer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	is := &issuer{t: t, key: key, codes: map[string]grant{}}
	mux := http.NewServeMux()
	cors := func(w http.ResponseWriter) { w.Header().Set("Access-Control-Allow-Origin", "*") }
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		cors(w)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.srv.URL, "authorization_endpoint": is.srv.URL + "/authorize", "token_endpoint": is.srv.URL + "/token",
			"jwks_uri": is.srv.URL + "/keys", "response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"}, "code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("GET /authorize", is.authorize)
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		cors(w)
		is.token(w, r)
	})
	mux.HandleFunc("OPTIONS /token", func(w http.ResponseWriter, _ *http.Request) {
		cors(w)
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
		w.WriteHeader(http.StatusNoContent)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("client_id") != clientID || q.Get("nonce") == "" {
		http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
		return
	}
	code := rand.Text()
	is.mu.Lock()
	is.codes[code] = grant{challenge: q.Get("code_challenge"), client: q.Get("client_id"), redirect: q.Get("redirect_uri"), nonce: q.Get("nonce")}
	is.mu.Unlock()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := back.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (is *issuer) token(w http.ResponseWriter, r *http.Request) {
	refuse := func() {
		is.mu.Lock()
		is.refused++
		is.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
	}
	if r.ParseForm() != nil || r.PostForm.Get("grant_type") != "authorization_code" {
		refuse()
		return
	}
	is.mu.Lock()
	g, ok := is.codes[r.PostForm.Get("code")]
	delete(is.codes, r.PostForm.Get("code")) // a code is good once
	is.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || r.PostForm.Get("client_id") != g.client || r.PostForm.Get("redirect_uri") != g.redirect {
		refuse()
		return
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	require.NoError(is.t, err)
	idToken, err := jwt.Signed(signer).Claims(map[string]any{
		"iss": is.srv.URL, "aud": clientID, "sub": "user-ann", "email": "ann@acme.example", "nonce": g.nonce,
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "org": "acme", "roles": []string{"user", "approver"},
	}).Serialize()
	require.NoError(is.t, err)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id_token": idToken, "access_token": "opaque", "token_type": "Bearer", "expires_in": 3600})
}

// TestBrowserOpenIDConnectLogin: the page logs in at the issuer with the
// authorization-code flow and PKCE, and the API takes the ID token it
// got as the person's bearer: the session the person creates is theirs.
func TestBrowserOpenIDConnectLogin(t *testing.T) {
	is := newIssuer(t)
	oidc, err := server.NewOIDC(t.Context(), server.OIDCConfig{Issuer: is.srv.URL, Audience: clientID, NameClaim: "email", TenantClaim: "org"})
	require.NoError(t, err)
	s := newStackWith(t, oidc, webui.Config{OIDC: &webui.OIDC{Issuer: is.srv.URL, ClientID: clientID}})
	p := &page{t: t, ctx: browsertest.New(t)}
	p.do(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#oidc-login")))
	p.do(chromedp.Click(chromedp.CSS("#oidc-login")))
	// The page goes to the issuer and comes back: evaluations fail while
	// it navigates, so ask again until the list shows.
	require.Eventually(t, func() bool {
		ok, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](`location.origin + location.pathname === '`+s.url+`/ui/' && !!document.querySelector('table.sessions')`))
		return err == nil && ok
	}, 30*time.Second, 100*time.Millisecond, "the sessions list after the issuer's redirect")
	assert.Equal(t, "Logged in as ann@acme.example", p.text("#who-name"))
	assert.Equal(t, "", p.eval(`location.search`), "the code and state are gone from the address")
	p.do(chromedp.Click(chromedp.CSS("#new-session")))
	p.until("the new session's timeline", `location.hash.startsWith('#/sessions/') && !!document.getElementById('live')`)
	assert.Contains(t, p.text("main dl.facts"), "acme · created by ann@acme.example")
	is.mu.Lock()
	assert.Zero(t, is.refused, "every exchange the page made was a good one")
	is.mu.Unlock()
}
