package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// bearer returns the bearer token of r's Authorization header (the scheme
// is case-insensitive, RFC 7235), or false when it carries none.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// looksLikeJWT reports whether token has a JWT's compact form: three
// dot-separated base64url parts, the first a JSON object (the header).
// Such a token goes to [OIDC]; a token file never holds one.
func looksLikeJWT(token string) bool {
	head, rest, ok := strings.Cut(token, ".")
	if !ok || strings.Count(rest, ".") != 1 {
		return false
	}
	data, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return false
	}
	var header map[string]json.RawMessage
	return json.Unmarshal(data, &header) == nil
}

// Chain returns an Authenticator that asks each of auths in turn: the
// first principal wins. An authenticator answers [ErrNoCredentials] for a
// request that carries nothing it reads ([OIDC] for a bearer token that is
// no JWT, [Tokens] for one that is), so a JWT is checked by OIDC and any
// other token by the token file. The chain refuses with
// [ErrBadCredentials] when one of them did, else ErrNoCredentials.
func Chain(auths ...Authenticator) Authenticator { return chain(auths) }

type chain []Authenticator

func (c chain) Authenticate(r *http.Request) (Principal, error) {
	var bad error
	for _, a := range c {
		p, err := a.Authenticate(r)
		switch {
		case err == nil:
			return p, nil
		case errors.Is(err, ErrNoCredentials):
		case bad == nil:
			bad = err
		}
	}
	if bad != nil {
		return Principal{}, bad
	}
	return Principal{}, ErrNoCredentials
}

// who returns the principal of a request to the route pattern: the one a
// stream ticket was issued to, for an event stream that names one, else
// the authenticator's ([LocalPrincipal] without one). Its refusals are
// 401 unauthorized.
func (s *Server) who(r *http.Request, pattern string) (Principal, error) {
	if q := r.URL.Query(); pattern == routeEvents && q.Has("ticket") {
		if p, ok := s.tickets.redeem(r.PathValue("id"), q.Get("ticket")); ok {
			return p, nil
		}
		return Principal{}, apiError(http.StatusUnauthorized, CodeUnauthorized,
			"the stream ticket is not accepted: unknown, used, expired or for another session (POST /v1/sessions/{id}/events/tickets gives one)")
	}
	if s.auth == nil {
		return LocalPrincipal, nil
	}
	p, err := s.auth.Authenticate(r)
	switch {
	case err == nil:
		return p, nil
	case errors.Is(err, ErrNoCredentials):
		return Principal{}, apiError(http.StatusUnauthorized, CodeUnauthorized, "a bearer token is required (Authorization: Bearer TOKEN)")
	}
	// Why is for the operator, not for the client.
	s.log.Debug("authentication failed", "method", r.Method, "path", r.URL.Path, "error", err)
	return Principal{}, &Error{status: http.StatusUnauthorized, Code: CodeUnauthorized,
		Message: "the bearer token is not accepted: unknown, expired, or not meant for this server", invalidToken: true}
}
