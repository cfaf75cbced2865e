package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/vigil-run/vigil/session"
)

// This file is what a principal may do: the role a route needs, and the
// sessions it may see. A request passes [Server.admit] before its handler
// runs, so no handler can forget either check.

// sessionPath marks the routes that name a session: their {id} is a
// session id, admitted only when the caller may see the session.
const sessionPath = "/v1/sessions/{id}"

type admittedKey struct{}

// admit checks that p may make request r to pattern, which needs role:
// for a route that names a session, that the session exists and p sees
// it (else 404, the same as an unknown session, so another tenant's
// session is never told apart from none), then that p has role (else 403
// forbidden). It returns r carrying the admitted session's header.
func (s *Server) admit(r *http.Request, pattern string, role Role) (*http.Request, error) {
	p := PrincipalOf(r.Context())
	if !strings.Contains(pattern, sessionPath) {
		return r, s.allowed(p, role, r)
	}
	info, err := s.sessionFor(r.Context(), r.PathValue("id"))
	if err != nil {
		return r, err
	}
	if err := s.allowed(p, role, r); err != nil {
		return r, err
	}
	return r.WithContext(context.WithValue(r.Context(), admittedKey{}, info)), nil
}

// allowed refuses p a request that needs a role p lacks.
func (s *Server) allowed(p Principal, role Role, r *http.Request) error {
	if p.Has(role) {
		return nil
	}
	return apiError(http.StatusForbidden, CodeForbidden, "%s %s needs the %s role, which %s lacks", r.Method, r.URL.Path, role, p.Name)
}

// sessionFor returns the header of session id if the principal of ctx
// may see it: an invalid id is 400, an unknown session or another
// tenant's 404.
func (s *Server) sessionFor(ctx context.Context, id string) (session.Info, error) {
	if !session.ValidID(id) {
		return session.Info{}, apiError(http.StatusBadRequest, CodeBadRequest, "%q is not a session id (1 to 128 letters, digits, '-' and '_')", id)
	}
	info, err := s.rt.SessionInfo(ctx, id)
	if errors.Is(err, session.ErrNotFound) || err == nil && !s.visible(ctx, info) {
		// One answer for both, word for word.
		return session.Info{}, apiError(http.StatusNotFound, CodeNotFound, "no session %s", id)
	}
	return info, err
}

// admitted returns the session the request names, as [Server.admit]
// checked it.
func admitted(r *http.Request) session.Info {
	info, _ := r.Context().Value(admittedKey{}).(session.Info)
	return info
}

// tenantOf is the tenant of p: [DefaultTenant] when it names none.
func (p Principal) tenantOf() string {
	if p.Tenant == "" {
		return DefaultTenant
	}
	return p.Tenant
}

// visible reports whether the principal of ctx may see session info: an
// admin sees every tenant's sessions, anyone else its own tenant's.
// Every route that names or lists sessions asks it, so a session of
// another tenant is 404, never 403.
func (s *Server) visible(ctx context.Context, info session.Info) bool {
	p := PrincipalOf(ctx)
	return p.Has(RoleAdmin) || info.TenantOf() == p.tenantOf()
}

// ownerOf is the tenant a session p creates is written with: none for
// the default tenant, so a server with one tenant writes the headers it
// always did.
func ownerOf(p Principal) string {
	if t := p.tenantOf(); t != DefaultTenant {
		return t
	}
	return ""
}
