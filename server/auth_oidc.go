package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
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
}

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
	provider, err := oidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("server: OpenID Connect issuer %s: %w", cfg.Issuer, err)
	}
	// The key set lives as long as the authenticator; the context only
	// carries the client.
	v := provider.VerifierContext(context.WithoutCancel(ctx), &oidc.Config{ClientID: cfg.Audience})
	return &OIDC{cfg: cfg, verifier: v}, nil
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
