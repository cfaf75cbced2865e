package server

import (
	"context"
	"errors"
	"net/http"

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

// Has reports whether p holds role r. An admin holds every role, and a
// user or an approver also reads (viewer): acting on a session one cannot
// see would be acting blind, and an approver's inbox is a read.
func (p Principal) Has(r Role) bool {
	for _, held := range p.Roles {
		if held == r || held == RoleAdmin || r == RoleViewer && (held == RoleUser || held == RoleApprover) {
			return true
		}
	}
	return false
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
