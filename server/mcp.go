package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentsrv/mcpserve"
)

// This file is /mcp: the composition's agents as MCP tools over
// streamable HTTP (agentsrv/mcpserve), behind the API's gate. Each
// request to it is authenticated, checked for the user role and its Host
// like any route; a call's turn runs in a session of the caller's tenant
// (one it names must be one it sees), logged as the caller's, and only
// a caller with the approver role is asked its approvals.

// routeMCP is the path of the MCP endpoint; it is no REST route, so the
// OpenAPI document leaves it out.
const routeMCP = "/mcp"

// mcpSessionTimeout is how long an MCP session may pass without a
// request before the server forgets it.
const mcpSessionTimeout = 30 * time.Minute

// principalExtra is the key of the principal in an MCP request's token
// information.
const principalExtra = "vigil/principal"

// mcpRoutes are the methods of streamable HTTP at /mcp: POST (messages),
// GET (the server's stream), DELETE (the end of an MCP session).
func (s *Server) mcpRoutes() ([]route, error) {
	srv, err := mcpserve.New(s.rt, mcpserve.Options{Access: mcpAccess{s}, Logger: s.log.Named("mcp")})
	if err != nil {
		return nil, err
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		// The API's own Host check ran (it knows the allowed hosts).
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        s.opts.MaxBody,
		// A client that went away without ending its MCP session is
		// forgotten; the clock stops while one of its requests runs.
		SessionTimeout: mcpSessionTimeout,
	})
	if s.auth != nil {
		// The SDK binds an MCP session to the user who opened it, and
		// hands each call the principal, through its token information.
		h = auth.RequireBearerToken(principalToken, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	var out []route
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		out = append(out, route{m + " " + routeMCP, RoleUser, h.ServeHTTP})
	}
	return out, nil
}

// principalToken is the token information of a request the API's
// authenticator admitted: its principal.
func principalToken(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	p := PrincipalOf(ctx)
	return &auth.TokenInfo{UserID: p.tenantOf() + "/" + p.Name, Extra: map[string]any{principalExtra: p}}, nil
}

// mcpAccess is the API's gate for MCP calls.
type mcpAccess struct{ s *Server }

// Caller is the call's principal: the one its token information carries,
// or, without authentication, the local one.
func (a mcpAccess) Caller(ctx context.Context, req *mcp.CallToolRequest) (context.Context, mcpserve.Caller, error) {
	p := LocalPrincipal
	if a.s.auth != nil {
		var ok bool
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			p, ok = ex.TokenInfo.Extra[principalExtra].(Principal)
		}
		if !ok {
			return ctx, mcpserve.Caller{}, errors.New("server: an MCP call without its principal")
		}
	}
	return withPrincipal(ctx, p), mcpserve.Caller{Name: p.Name, Tenant: ownerOf(p), MayDecide: p.Has(RoleApprover)}, nil
}

// Admit lets the caller continue a session it sees; any other is one
// that does not exist.
func (a mcpAccess) Admit(ctx context.Context, id string) error {
	_, err := a.s.sessionFor(ctx, id)
	var e *Error
	if errors.As(err, &e) && e.status < http.StatusInternalServerError {
		return fmt.Errorf("%w: %s", vigil.ErrNotFound, e.Message)
	}
	return err
}
