package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/internal/hostcheck"
)

// DefaultMaxBody bounds a request body unless [Options].MaxBody says
// otherwise: 1 MiB.
const DefaultMaxBody = 1 << 20

// Options configure a [Server].
type Options struct {
	// Tokens are bearer tokens of admins of the default tenant; none and
	// no Auth means no authentication (the caller binds loopback only
	// then; see [CheckBind]).
	Tokens []string
	// Auth, when set, tells who makes each request ([Tokens], [OIDC], a
	// [Chain] of them; Options.Tokens are then ignored). Without it and
	// without Options.Tokens every caller is [LocalPrincipal].
	Auth Authenticator
	// Addr is the address the server listens on, as its listener has it
	// (host:port). A request's Host header must name it: a loopback name
	// (localhost, 127.0.0.1, [::1]) or the bound host, or for a wildcard
	// address this machine's addresses and name, at its port; else the
	// request is refused with 421 wrong_host, which stops DNS rebinding.
	// Empty: the loopback names at any port.
	Addr string
	// AllowedHosts are other Host header values served: a host (at any
	// port) or a host:port, such as the name a reverse proxy forwards.
	AllowedHosts []string
	// CORSOrigins are the origins allowed to call the API from a browser
	// ("*" for any); none refuses cross-origin requests.
	CORSOrigins []string
	// MaxBody bounds request bodies in bytes (default [DefaultMaxBody]).
	MaxBody int64
	// BodyTimeout bounds how long a request body may take to arrive
	// (default [DefaultBodyTimeout]); a body later than that is a 408.
	BodyTimeout time.Duration
	// StreamWriteTimeout bounds how long a write to a following stream
	// may block (default [DefaultStreamWriteTimeout]): a client that
	// stops reading is let go then.
	StreamWriteTimeout time.Duration
	// Verifies bounds the verifications run at once (default
	// [DefaultVerifies]); more wait for their turn.
	Verifies int
	// CheckpointKeys are the public keys a session's signed checkpoints
	// are checked against when a step's request is shown (`vigil serve
	// --checkpoint-key`); nil: a checkpoint is reported signed but
	// unverified.
	CheckpointKeys note.Verifiers
	// Metrics, when set, counts requests and serves /metrics.
	Metrics *Metrics
	// Logger logs failed requests (default: nothing).
	Logger hclog.Logger
	// UI, when set, is served under /ui/ (package webui): a page that
	// calls this API with its user's credentials, so it needs none itself.
	UI http.Handler
}

// Server is the HTTP API over a runtime. It is an http.Handler.
type Server struct {
	rt      *vigil.Runtime
	opts    Options
	log     hclog.Logger
	mux     *http.ServeMux
	auth    Authenticator // nil: every caller is LocalPrincipal
	hosts   hostcheck.Policy
	tickets *tickets
	handler http.Handler
	// verifies holds a token per verification running (see Verifies).
	verifies chan struct{}
	// replays holds a token while a replay runs: one at a time.
	replays chan struct{}
}

// New returns the API of rt. Turns are queued in rt's store, which must
// keep a queue ([session.Queue]); a worker runs them.
func New(rt *vigil.Runtime, o Options) (*Server, error) {
	if _, err := rt.Queue(); err != nil {
		return nil, err
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.StreamWriteTimeout <= 0 {
		o.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if o.Verifies <= 0 {
		o.Verifies = DefaultVerifies
	}
	s := &Server{rt: rt, opts: o, log: o.Logger, mux: http.NewServeMux(), auth: o.Auth,
		hosts: hostcheck.New(o.Addr, o.AllowedHosts), tickets: newTickets(), verifies: make(chan struct{}, o.Verifies), replays: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	if tokens := adminTokens(o.Tokens); s.auth == nil && tokens.Len() > 0 {
		s.auth = tokens
	}
	mcpRoutes, err := s.protocolRoutes()
	if err != nil {
		return nil, err
	}
	for _, rt := range append(s.routes(), mcpRoutes...) {
		s.mux.Handle(rt.pattern, s.instrument(rt.pattern, rt.role, rt.h))
	}
	if o.UI != nil {
		s.mux.Handle(routeUI, s.instrument(routeUI, open, o.UI.ServeHTTP))
	}
	s.mux.HandleFunc("/", s.noRoute)
	s.handler = s.cors(s.mux)
	return s, nil
}

// noRoute answers what no route matches: 405 when the path has a route
// for another method, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		other := r.Clone(r.Context())
		other.Method = m
		if _, pattern := s.mux.Handler(other); pattern != "/" && m != r.Method {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, r, apiError(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s %s: use %s", r.Method, r.URL.Path, strings.Join(allow, " or ")))
		return
	}
	s.writeError(w, r, apiError(http.StatusNotFound, CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
}

// route is one endpoint and the role it needs; open ones (no role) need
// no credentials. A route under /v1/sessions/{id} is also admitted only
// for a caller that may see that session (see [Server.admit]).
type route struct {
	pattern string
	role    Role
	h       http.HandlerFunc
}

// open is the role of a route anyone may call.
const open Role = ""

func (s *Server) routes() []route {
	return append(s.probeRoutes(), []route{
		{"GET /openapi.json", open, handleOpenAPI},
		{"POST /v1/sessions", RoleUser, s.reply(s.handleCreate)},
		{"GET /v1/sessions", RoleViewer, s.reply(s.handleList)},
		{"GET /v1/sessions/{id}", RoleViewer, s.reply(s.handleGet)},
		{"DELETE /v1/sessions/{id}", RoleUser, s.reply(s.handleDelete)},
		{"POST /v1/sessions/{id}/turns", RoleUser, s.reply(s.handleTurn)},
		{routeEvents, RoleViewer, s.handleEvents},
		{"POST /v1/sessions/{id}/events/tickets", RoleViewer, s.reply(s.handleTicket)},
		{"POST /v1/sessions/{id}/approvals/{call}", RoleApprover, s.reply(s.handleDecide)},
		{"POST /v1/sessions/{id}/reconcile/{call}", RoleApprover, s.reply(s.handleReconcile)},
		{"POST /v1/sessions/{id}/cancel", RoleUser, s.reply(s.handleCancel)},
		{"GET /v1/sessions/{id}/verify", RoleViewer, s.reply(s.handleVerify)},
		{"GET /v1/sessions/{id}/steps", RoleViewer, s.reply(s.handleSteps)},
		{"GET /v1/sessions/{id}/steps/{turn}/{step}/request", RoleViewer, s.reply(s.handleStepRequest)},
		{"POST /v1/sessions/{id}/forks", RoleUser, s.reply(s.handleFork)},
		{"GET /v1/sessions/{id}/trace", RoleViewer, s.reply(s.handleTrace)},
		{"GET /v1/sessions/{id}/usage", RoleViewer, s.reply(s.handleUsage)},
		{"GET /v1/sessions/{id}/replay", RoleViewer, s.reply(s.handleReplay)},
		{"GET /v1/jobs/{id}", RoleViewer, s.reply(s.handleJob)},
		{"GET /v1/approvals", RoleViewer, s.reply(s.handleApprovals)},
	}...)
}

// routeUI serves the web UI's page and assets ([Options].UI): no API
// route, so the OpenAPI document leaves it out.
const routeUI = "GET /ui/"

// routeEvents is the route of the event streams, which take a stream
// ticket instead of a bearer token.
const routeEvents = "GET /v1/sessions/{id}/events"

// ServeHTTP answers r, unless its Host names another server.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := s.checkHost(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.handler.ServeHTTP(w, r)
}

// replier is an endpoint that answers JSON: a status and a body, or an
// error ([classify] gives its status and code). It may set headers on w.
type replier func(w http.ResponseWriter, r *http.Request) (int, any, error)

// reply adapts a replier to net/http.
func (s *Server) reply(fn replier) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		status, body, err := fn(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, status, body)
	}
}

// instrument wraps an endpoint: authentication, authorization (the role
// the route needs, the session it names) and the JSON content type of a
// POST, all answered before the body is read; the body's size and time
// bounds; a recovered panic as a 500; and the request metrics.
func (s *Server) instrument(pattern string, role Role, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w.Header().Set("X-Content-Type-Options", "nosniff")
		r = withRequestID(w, r)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("handler panicked", "route", pattern, "panic", p)
				if !sw.wrote {
					s.writeError(sw, r, fmt.Errorf("internal error"))
				}
			}
			s.opts.Metrics.request(r.Context(), r.Method, pattern, sw.status, time.Since(start))
		}()
		if role != open {
			p, err := s.who(r, pattern)
			if err != nil {
				s.writeError(sw, r, err)
				return
			}
			if r, err = s.admit(r.WithContext(withPrincipal(r.Context(), p)), pattern, role); err != nil {
				s.writeError(sw, r, err)
				return
			}
		}
		if err := requireJSON(r); err != nil {
			s.writeError(sw, r, err)
			return
		}
		bound(sw, r, s.opts.MaxBody, s.opts.BodyTimeout)
		h(sw, r)
	})
}

// cors answers browsers from the configured origins; without any, the
// API sends no CORS headers, so browsers refuse cross-origin calls.
func (s *Server) cors(next http.Handler) http.Handler {
	if len(s.opts.CORSOrigins) == 0 {
		return next
	}
	any := slices.Contains(s.opts.CORSOrigins, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && (any || slices.Contains(s.opts.CORSOrigins, origin)) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// statusWriter remembers the status written, for the metrics, and keeps
// flushing (server-sent events) possible.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ErrOpenBind is returned by [CheckBind] for a non-loopback address
// without authentication.
var ErrOpenBind = errors.New("server: refusing to listen beyond loopback without authentication")

// CheckBind refuses to serve on a non-loopback address without an
// authenticator (tokens, OpenID Connect): anyone who can reach it could
// run the agent's tools.
func CheckBind(addr string, auth Authenticator) error {
	if auth != nil || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("%w: %s (give --token-file, VIGIL_TOKENS or --oidc-issuer, or bind 127.0.0.1)", ErrOpenBind, addr)
}
