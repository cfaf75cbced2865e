package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// OIDCConfig configures [NewOIDC].
type OIDCConfig struct {
	// Issuer is the OpenID Connect issuer URL; its discovery document
	// (/.well-known/openid-configuration) names the JWKS its keys are
	// fetched from.
	Issuer string
	// Audience is the value a token's aud must hold (the client ID or the
	// API's identifier at the issuer). Required: without it, a token the
	// issuer made for any other application would do.
	Audience string
	// NameClaim gives the principal's name (default "sub"; "email" for
	// instance).
	NameClaim string
	// TenantClaim gives the principal's tenant; "" puts every principal
	// in [DefaultTenant]. A token without it is refused.
	TenantClaim string
	// RolesClaim gives the roles (default "roles"): a list of strings or
	// one string separated by spaces or commas. Names that are no role
	// (the issuer's other groups) are ignored.
	RolesClaim string
	// Client fetches the discovery document and the keys (default: a
	// client with a 10 s timeout).
	Client *http.Client
	// KeyRefetchEvery is the least time between two fetches of the keys
	// that tokens naming a key ID not seen to verify may cause (default
	// [DefaultKeyRefetchEvery]): tokens with made-up key IDs cannot
	// flood the issuer, and a rotated key is picked up within it.
	KeyRefetchEvery time.Duration
}

// DefaultKeyRefetchEvery is [OIDCConfig].KeyRefetchEvery's default.
const DefaultKeyRefetchEvery = 10 * time.Second

// OIDC is an [Authenticator] of JWT bearer tokens that an OpenID Connect
// issuer signed: signature (by a key of the issuer's JWKS, fetched again
// when a token names a key it does not know, so rotated keys are picked
// up), issuer, audience and expiry are checked by go-oidc; unsigned
// tokens (alg none) are refused.
type OIDC struct {
	cfg      OIDCConfig
	verifier *oidc.IDTokenVerifier
}

// NewOIDC reads the issuer's discovery document and returns the
// authenticator of its tokens.
func NewOIDC(ctx context.Context, cfg OIDCConfig) (*OIDC, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("server: OpenID Connect needs an issuer and an audience (--oidc-issuer, --oidc-audience)")
	}
	if cfg.NameClaim == "" {
		cfg.NameClaim = "sub"
	}
	if cfg.RolesClaim == "" {
		cfg.RolesClaim = "roles"
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	ctx = oidc.ClientContext(ctx, cfg.Client)
	if cfg.KeyRefetchEvery <= 0 {
		cfg.KeyRefetchEvery = DefaultKeyRefetchEvery
	}
	provider, err := oidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("server: OpenID Connect issuer %s: %w", cfg.Issuer, err)
	}
	var meta struct {
		JWKS string   `json:"jwks_uri"`
		Algs []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := provider.Claims(&meta); err != nil || meta.JWKS == "" {
		return nil, fmt.Errorf("server: OpenID Connect issuer %s names no jwks_uri", cfg.Issuer)
	}
	// The key set lives as long as the authenticator; the context only
	// carries the client.
	keys := newRefetchFloor(oidc.NewRemoteKeySet(context.WithoutCancel(ctx), meta.JWKS), cfg.KeyRefetchEvery)
	v := oidc.NewVerifier(cfg.Issuer, keys, &oidc.Config{ClientID: cfg.Audience, SupportedSigningAlgs: signingAlgs(meta.Algs)})
	return &OIDC{cfg: cfg, verifier: v}, nil
}

// asymmetric are the signature algorithms a token may use: the issuer's
// public keys verify them (never none, never a shared secret).
var asymmetric = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// signingAlgs are the algorithms of the issuer's discovery document that
// are asymmetric; RS256, which every issuer supports, when none is.
func signingAlgs(offered []string) []string {
	var out []string
	for _, a := range offered {
		if slices.Contains(asymmetric, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		out = []string{oidc.RS256}
	}
	return out
}

// Authenticate verifies r's bearer token and reads its principal from the
// configured claims. A request without a JWT is [ErrNoCredentials].
func (o *OIDC) Authenticate(r *http.Request) (Principal, error) {
	tok, ok := bearer(r)
	if !ok || !looksLikeJWT(tok) {
		return Principal{}, ErrNoCredentials
	}
	idt, err := o.verifier.Verify(r.Context(), tok)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %w", ErrBadCredentials, err)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Principal{}, fmt.Errorf("%w: %w", ErrBadCredentials, err)
	}
	p := Principal{Tenant: DefaultTenant}
	if p.Name, ok = claim(claims, o.cfg.NameClaim).(string); !ok || p.Name == "" {
		return Principal{}, fmt.Errorf("%w: no %s claim (the name)", ErrBadCredentials, o.cfg.NameClaim)
	}
	if o.cfg.TenantClaim != "" {
		if p.Tenant, ok = claim(claims, o.cfg.TenantClaim).(string); !ok || p.Tenant == "" {
			return Principal{}, fmt.Errorf("%w: no %s claim (the tenant)", ErrBadCredentials, o.cfg.TenantClaim)
		}
	}
	p.Roles = rolesOf(claim(claims, o.cfg.RolesClaim))
	return p, nil
}

// claim returns the claim name of claims: the top-level one, else, for a
// dotted name, the one nested along its path (realm_access.roles).
func claim(claims map[string]any, name string) any {
	if v, ok := claims[name]; ok {
		return v
	}
	var v any = claims
	for part := range strings.SplitSeq(name, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

// rolesOf reads the roles of a claim: a list of strings, or one string
// of names separated by spaces or commas. Other names are ignored.
func rolesOf(v any) []Role {
	var names []string
	switch v := v.(type) {
	case string:
		names = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				names = append(names, s)
			}
		}
	}
	var roles []Role
	for _, n := range names {
		if r, err := ParseRole(strings.TrimSpace(n)); err == nil && !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	return roles
}

// refetchFloor is the issuer's key set (go-oidc's, which fetches the keys
// again when a token names a key ID it does not hold) with a floor under
// those fetches: a token under a key ID no token was seen to verify under
// may reach the key set once per every; others are refused at once. A
// forged token under a known key ID still makes go-oidc fetch again, one
// fetch at a time.
type refetchFloor struct {
	keys  oidc.KeySet
	every time.Duration
	now   func() time.Time

	// unseen lets one token under a key ID not seen yet reach keys at a
	// time: the first tokens of a person's new key often come together
	// (a page's first requests), and the second must wait for the first's
	// fetch, not be refused by the floor that fetch set.
	unseen chan struct{}

	mu   sync.Mutex
	seen map[string]bool // key IDs tokens verified under
	next time.Time       // when an unseen key ID may reach keys again
}

func newRefetchFloor(keys oidc.KeySet, every time.Duration) *refetchFloor {
	return &refetchFloor{keys: keys, every: every, now: time.Now, unseen: make(chan struct{}, 1), seen: map[string]bool{}}
}

// maxSeenKeys bounds the key IDs remembered; an issuer publishes a few.
const maxSeenKeys = 64

func (f *refetchFloor) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	kid := keyID(jwt)
	if !f.isSeen(kid) {
		select {
		case f.unseen <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-f.unseen }()
		f.mu.Lock()
		if !f.seen[kid] { // else a token verified under it meanwhile
			now := f.now()
			if now.Before(f.next) {
				f.mu.Unlock()
				return nil, fmt.Errorf("a key ID the issuer's keys did not hold when fetched less than %s ago", f.every)
			}
			f.next = now.Add(f.every)
		}
		f.mu.Unlock()
	}
	payload, err := f.keys.VerifySignature(ctx, jwt)
	if err == nil {
		f.mu.Lock()
		if len(f.seen) < maxSeenKeys {
			f.seen[kid] = true
		}
		f.mu.Unlock()
	}
	return payload, err
}

func (f *refetchFloor) isSeen(kid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[kid]
}

// keyID returns the kid of a JWT's header ("" when it names none).
func keyID(jwt string) string {
	head, _, _ := strings.Cut(jwt, ".")
	data, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Kid string `json:"kid"`
	}
	_ = json.Unmarshal(data, &h)
	return h.Kid
}
