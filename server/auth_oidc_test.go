package server_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
)

// issuer is an OpenID Connect issuer over real HTTP: its discovery
// document and its JWKS, whose keys the test rotates.
type issuer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    []jose.JSONWebKey // published (public)
	fetches atomic.Int32      // JWKS requests
	slow    atomic.Bool       // the JWKS answers after 200 ms
}

// signingKey is a private key and the kid it is published under.
type signingKey struct {
	kid string
	alg jose.SignatureAlgorithm
	key crypto.Signer
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	is := &issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                is.srv.URL,
			"authorization_endpoint":                is.srv.URL + "/authorize",
			"token_endpoint":                        is.srv.URL + "/token",
			"jwks_uri":                              is.srv.URL + "/keys",
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		is.fetches.Add(1)
		if is.slow.Load() {
			time.Sleep(200 * time.Millisecond)
		}
		is.mu.Lock()
		set := jose.JSONWebKeySet{Keys: is.keys}
		is.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// publish makes keys the JWKS.
func (is *issuer) publish(keys ...signingKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys = nil
	for _, k := range keys {
		is.keys = append(is.keys, jose.JSONWebKey{Key: k.key.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
	}
}

func ecKey(t *testing.T, kid string) signingKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return signingKey{kid: kid, alg: jose.ES256, key: k}
}

func rsaKey(t *testing.T, kid string) signingKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return signingKey{kid: kid, alg: jose.RS256, key: k}
}

// sign returns a JWT of claims signed with k.
func sign(t *testing.T, k signingKey, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.kid))
	require.NoError(t, err)
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	require.NoError(t, err)
	return tok
}

// claimsFor are valid claims of the issuer for audience vigil-api.
func (is *issuer) claimsFor(name string, extra ...any) map[string]any {
	c := map[string]any{
		"iss": is.srv.URL, "aud": "vigil-api", "sub": "user-" + name, "email": name + "@example.com",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(),
		"org": "acme", "groups": []string{"user", "approver", "offline_access"},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == nil {
			delete(c, extra[i].(string))
		} else {
			c[extra[i].(string)] = extra[i+1]
		}
	}
	return c
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestOIDCTokensAreVerifiedAgainstTheIssuersRotatingKeys(t *testing.T) {
	is := newIssuer(t)
	k1, k2, stranger := ecKey(t, "k1"), rsaKey(t, "k2"), ecKey(t, "k2")
	is.publish(k1)
	oidc, err := server.NewOIDC(context.Background(), server.OIDCConfig{
		Issuer: is.srv.URL, Audience: "vigil-api", NameClaim: "email", TenantClaim: "org", RolesClaim: "groups",
		KeyRefetchEvery: time.Millisecond})
	require.NoError(t, err)
	file, err := server.NewTokens("", "carol default admin "+carolTok)
	require.NoError(t, err)
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{Auth: server.Chain(file, oidc)})
	status := func(tok string) (int, server.Error, http.Header) {
		t.Helper()
		req, err := http.NewRequest("GET", a.srv.URL+"/v1/sessions", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var e server.Error
		if resp.StatusCode != http.StatusOK {
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		}
		return resp.StatusCode, e, resp.Header
	}

	alice := sign(t, k1, is.claimsFor("alice"))
	code, e, _ := status(alice)
	require.Equal(t, http.StatusOK, code, "%+v", e)
	p, err := authAs(oidc, "Bearer "+alice)
	require.NoError(t, err)
	assert.Equal(t, server.Principal{Name: "alice@example.com", Tenant: "acme", Roles: []server.Role{server.RoleUser, server.RoleApprover}}, p)
	code, _, _ = status(carolTok)
	assert.Equal(t, http.StatusOK, code, "the token file answers beside OIDC")

	// The issuer rotates to k2: a token under the new kid makes the key
	// set fetch the JWKS again, and is accepted.
	before := is.fetches.Load()
	is.publish(k2)
	bob := sign(t, k2, is.claimsFor("bob", "groups", "viewer, user"))
	code, e, _ = status(bob)
	require.Equal(t, http.StatusOK, code, "the new key's token after rotation: %+v", e)
	assert.Greater(t, is.fetches.Load(), before, "the JWKS was fetched again for the unknown kid")
	p, err = authAs(oidc, "Bearer "+bob)
	require.NoError(t, err)
	assert.Equal(t, []server.Role{server.RoleViewer, server.RoleUser}, p.Roles, "roles from a comma and space string")

	// Refused, each with 401 and a JSON error.
	for _, tc := range []struct{ name, token string }{
		{"the retired key's token", alice},
		{"expired", sign(t, k2, is.claimsFor("eve", "exp", time.Now().Add(-time.Minute).Unix()))},
		{"wrong audience", sign(t, k2, is.claimsFor("eve", "aud", "another-app"))},
		{"no audience", sign(t, k2, is.claimsFor("eve", "aud", nil))},
		{"wrong issuer", sign(t, k2, is.claimsFor("eve", "iss", "https://evil.example"))},
		{"bad signature: another key under the published kid", sign(t, stranger, is.claimsFor("eve"))},
		{"bad signature: payload changed", tamper(t, sign(t, k2, is.claimsFor("eve", "groups", []string{"viewer"})))},
		{"unsigned (alg none)", b64(`{"alg":"none","typ":"JWT"}`) + "." + b64(mustJSON(t, is.claimsFor("eve"))) + "."},
		{"unsigned (alg none) with the kid", b64(`{"alg":"none","kid":"k2"}`) + "." + b64(mustJSON(t, is.claimsFor("eve"))) + "."},
		{"HS256 keyed with nothing", hs256(t, is.claimsFor("eve"))},
		{"no name claim", sign(t, k2, is.claimsFor("eve", "email", nil))},
		{"no tenant claim", sign(t, k2, is.claimsFor("eve", "org", nil))},
		{"not a JWT and not a file token", "eyJhbGciOiJFUzI1NiJ9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, e, h := status(tc.token)
			assert.Equal(t, http.StatusUnauthorized, code)
			assert.Equal(t, server.CodeUnauthorized, e.Code)
			assert.NotEmpty(t, e.Message)
			assert.Contains(t, h.Get("WWW-Authenticate"), `error="invalid_token"`)
		})
	}
	code, _, _ = status(bob)
	assert.Equal(t, http.StatusOK, code, "the current key still answers")
}

// Tokens under made-up key IDs make the issuer's keys be fetched once
// per KeyRefetchEvery at most, however many come; a key the issuer
// rotates in is picked up after it.
func TestOIDCMadeUpKeyIDsCannotFloodTheIssuer(t *testing.T) {
	is := newIssuer(t)
	k1, k2 := ecKey(t, "k1"), ecKey(t, "k2")
	is.publish(k1)
	const every = 2 * time.Second
	oidc, err := server.NewOIDC(context.Background(), server.OIDCConfig{Issuer: is.srv.URL, Audience: "vigil-api", NameClaim: "email", KeyRefetchEvery: every})
	require.NoError(t, err)
	_, err = authAs(oidc, "Bearer "+sign(t, k1, is.claimsFor("alice")))
	require.NoError(t, err)
	start := time.Now()
	fetched := is.fetches.Load()
	stranger := ecKey(t, "")
	for i := range 200 {
		stranger.kid = "made-up-" + strconv.Itoa(i)
		_, err := authAs(oidc, "Bearer "+sign(t, stranger, is.claimsFor("eve")))
		require.ErrorIs(t, err, server.ErrBadCredentials)
	}
	require.Less(t, time.Since(start), every, "the tokens came within one floor")
	assert.LessOrEqual(t, is.fetches.Load()-fetched, int32(1), "200 made-up key IDs, one fetch at most")
	_, err = authAs(oidc, "Bearer "+sign(t, k1, is.claimsFor("alice")))
	require.NoError(t, err, "a known key answers throughout")

	is.publish(k1, k2)
	bob := "Bearer " + sign(t, k2, is.claimsFor("bob"))
	require.Eventually(t, func() bool { _, err := authAs(oidc, bob); return err == nil }, 3*every, every/10,
		"the rotated-in key is picked up after the floor")
}

// A person's first requests come together (the web UI asks for its
// sessions and its approvals at once): each token under the key ID
// being fetched waits for that fetch, and none is refused by the floor
// it set.
func TestOIDCTheFirstTokensUnderANewKeyIDAllPass(t *testing.T) {
	is := newIssuer(t)
	k1 := ecKey(t, "k1")
	is.publish(k1)
	is.slow.Store(true)
	oidc, err := server.NewOIDC(context.Background(), server.OIDCConfig{Issuer: is.srv.URL, Audience: "vigil-api", NameClaim: "email", KeyRefetchEvery: time.Minute})
	require.NoError(t, err)
	tok := "Bearer " + sign(t, k1, is.claimsFor("ann"))
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = authAs(oidc, tok) })
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "request %d", i)
	}
	assert.Equal(t, int32(1), is.fetches.Load(), "one fetch for all of them")
}

func TestOIDCNeedsAnAudienceAndTheIssuerItNames(t *testing.T) {
	is := newIssuer(t)
	_, err := server.NewOIDC(context.Background(), server.OIDCConfig{Issuer: is.srv.URL})
	assert.ErrorContains(t, err, "needs an issuer and an audience")
	_, err = server.NewOIDC(context.Background(), server.OIDCConfig{Issuer: is.srv.URL + "/other", Audience: "vigil-api"})
	assert.Error(t, err, "no discovery document there")
	_, err = server.NewOIDC(context.Background(), server.OIDCConfig{Issuer: strings.Replace(is.srv.URL, "127.0.0.1", "localhost", 1), Audience: "vigil-api"})
	assert.ErrorContains(t, err, "issuer", "the document names another issuer")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// tamper replaces a signed token's payload, keeping its signature.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(data, &c))
	c["groups"] = []string{"admin"}
	parts[1] = b64(mustJSON(t, c))
	return strings.Join(parts, ".")
}

// hs256 signs claims with HMAC under a key of the test's (as if the
// verifier took a shared secret): an algorithm the issuer does not use.
func hs256(t *testing.T, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k2"))
	require.NoError(t, err)
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	require.NoError(t, err)
	return tok
}
