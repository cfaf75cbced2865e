package server

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/vigil-run/vigil/session"
)

// Role is what a principal may do.
type Role string

// The roles. An admin may do everything, in every tenant.
const (
	// RoleViewer reads sessions, their events and their verification.
	RoleViewer Role = "viewer"
	// RoleUser creates sessions, posts turns, cancels and forks.
	RoleUser Role = "user"
	// RoleApprover decides approvals.
	RoleApprover Role = "approver"
	// RoleAdmin may do all of it, across tenants.
	RoleAdmin Role = "admin"
)

// DefaultTenant is the tenant of a session whose header names none (logs
// written before tenants, sessions made by the CLI) and of the local
// principal of a server without authentication.
const DefaultTenant = session.DefaultTenant

// Principal is who makes a request: a name (logged as who did what), the
// tenant whose sessions it sees, and its roles.
type Principal struct {
	Name   string
	Tenant string
	Roles  []Role
}

// Has reports whether p holds role r; an admin holds every role.
func (p Principal) Has(r Role) bool {
	return slices.Contains(p.Roles, r) || slices.Contains(p.Roles, RoleAdmin)
}

// LocalPrincipal is the caller of a server without authentication (bound
// to loopback only, see [CheckBind]): an admin of the default tenant.
var LocalPrincipal = Principal{Name: "local", Tenant: DefaultTenant, Roles: []Role{RoleAdmin}}

// ErrNoCredentials is the error of an [Authenticator] for a request that
// carries no credentials; ErrBadCredentials for one whose credentials are
// not accepted (unknown token, bad signature, expired, wrong audience).
var (
	ErrNoCredentials  = errors.New("server: no credentials")
	ErrBadCredentials = errors.New("server: credentials not accepted")
)

// Authenticator tells who made a request from its headers alone: it must
// not read the body, so a request without valid credentials is answered
// before its body arrives.
type Authenticator interface {
	Authenticate(r *http.Request) (Principal, error)
}

type principalKey struct{}

// withPrincipal returns ctx carrying p.
func withPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalOf returns the authenticated principal of a request the server
// is handling ([LocalPrincipal] when it has none).
func PrincipalOf(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		return p
	}
	return LocalPrincipal
}
