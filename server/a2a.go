package server

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/agentsrv/a2aserve"
)

// This file is /a2a: each of the composition's agents as an A2A agent
// (agentsrv/a2aserve), behind the API's gate. Its card, at
// /a2a/{agent}/.well-known/agent-card.json, is open (it is how a client
// finds the endpoint and learns it wants a bearer token); its JSON-RPC
// endpoint, POST /a2a/{agent}, is authenticated, Host-checked and needs
// the user role like any route. A task's session is of the caller's
// tenant (a task or context of another is one that does not exist), its
// turn logged as the caller's, and only a caller with the approver role
// may answer its approvals. Neither is a REST route: the OpenAPI document
// leaves them out.

// a2aPrefix is the path under which the agents are served.
const a2aPrefix = "/a2a/"

// protocolRoutes are the routes of the protocol servers: /mcp and /a2a.
func (s *Server) protocolRoutes() ([]route, error) {
	mcp, err := s.mcpRoutes()
	if err != nil {
		return nil, err
	}
	srv, err := a2aserve.New(s.rt, a2aserve.Options{Access: a2aAccess{mcpAccess{s}}, Logger: s.log.Named("a2a")})
	if err != nil {
		return nil, err
	}
	endpoints := map[string]http.Handler{}
	for _, name := range srv.Agents() {
		h, _ := srv.Handler(name)
		endpoints[name] = a2asrv.NewJSONRPCHandler(h)
	}
	card := func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("agent")
		c, ok := srv.Card(name, endpointURL(r, name), s.auth != nil)
		if !ok {
			s.writeError(w, r, apiError(http.StatusNotFound, CodeNotFound, "no agent %s", name))
			return
		}
		writeJSON(w, http.StatusOK, c)
	}
	call := func(w http.ResponseWriter, r *http.Request) {
		h, ok := endpoints[r.PathValue("agent")]
		if !ok {
			s.writeError(w, r, apiError(http.StatusNotFound, CodeNotFound, "no agent %s", r.PathValue("agent")))
			return
		}
		h.ServeHTTP(&streamWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: s.opts.StreamWriteTimeout}, r)
	}
	return append(mcp,
		route{"GET " + a2aPrefix + "{agent}" + a2asrv.WellKnownAgentCardPath, open, card},
		route{"POST " + a2aPrefix + "{agent}", RoleUser, call},
	), nil
}

// endpointURL is the URL of agent name's endpoint as the client reached
// this server (its Host passed the server's check).
func endpointURL(r *http.Request, name string) string {
	u := url.URL{Scheme: "http", Host: r.Host, Path: a2aPrefix + name}
	if r.TLS != nil {
		u.Scheme = "https"
	}
	return u.String()
}

// a2aAccess is the API's gate for A2A requests: the principal the
// request was authenticated as.
type a2aAccess struct{ mcpAccess }

// Caller implements a2aserve.Access.
func (a a2aAccess) Caller(ctx context.Context) (context.Context, agentsrv.Caller, error) {
	p := PrincipalOf(ctx)
	return ctx, agentsrv.Caller{Name: p.Name, Tenant: ownerOf(p), MayDecide: p.Has(RoleApprover)}, nil
}

// streamWriter lets the SDK stream server-sent events (message/stream,
// tasks/resubscribe) through the API's response writer, which flushes
// through its controller; a client that stops reading is let go once a
// write blocks longer than the stream write timeout, as on the events
// route.
type streamWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *streamWriter) Write(b []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (w *streamWriter) Flush() { _ = w.rc.Flush() }

func (w *streamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
