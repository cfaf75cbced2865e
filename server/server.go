package server

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/session"
)

// DefaultMaxBody bounds a request body unless [Options].MaxBody says
// otherwise: 1 MiB.
const DefaultMaxBody = 1 << 20

// Options configure a [Server].
type Options struct {
	// Tokens are the bearer tokens accepted; none means no authentication
	// (the caller binds loopback only then; see [CheckBind]).
	Tokens []string
	// Auth, when set, tells who makes each request (Tokens are then
	// ignored). Without it and without Tokens every caller is
	// [LocalPrincipal].
	Auth Authenticator
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
	// Metrics, when set, counts requests and serves /metrics.
	Metrics *Metrics
	// Logger logs failed requests (default: nothing).
	Logger hclog.Logger
}

// Server is the HTTP API over a runtime. It is an http.Handler.
type Server struct {
	rt      *vigil.Runtime
	opts    Options
	log     hclog.Logger
	mux     *http.ServeMux
	tokens  [][]byte
	handler http.Handler
	// verifies holds a token per verification running (see Verifies).
	verifies chan struct{}
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
	s := &Server{rt: rt, opts: o, log: o.Logger, mux: http.NewServeMux(), verifies: make(chan struct{}, o.Verifies)}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	for _, t := range o.Tokens {
		if t = strings.TrimSpace(t); t != "" {
			s.tokens = append(s.tokens, []byte(t))
		}
	}
	for _, rt := range s.routes() {
		s.mux.Handle(rt.pattern, s.instrument(rt.pattern, rt.open, rt.h))
	}
	s.mux.HandleFunc("/", s.noRoute)
	s.handler = s.cors(s.mux)
	return s, nil
}

// noRoute answers what no route matches: 405 when the path has a route
// for another method, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
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

// route is one endpoint; open ones need no token.
type route struct {
	pattern string
	open    bool
	h       http.HandlerFunc
}

func (s *Server) routes() []route {
	return []route{
		{"GET /healthz", true, s.reply(s.handleHealth)},
		{"GET /openapi.json", true, handleOpenAPI},
		{"GET /metrics", false, s.handleMetrics},
		{"POST /v1/sessions", false, s.reply(s.handleCreate)},
		{"GET /v1/sessions", false, s.reply(s.handleList)},
		{"GET /v1/sessions/{id}", false, s.reply(s.handleGet)},
		{"POST /v1/sessions/{id}/turns", false, s.reply(s.handleTurn)},
		{"GET /v1/sessions/{id}/events", false, s.handleEvents},
		{"POST /v1/sessions/{id}/approvals/{call}", false, s.reply(s.handleDecide)},
		{"POST /v1/sessions/{id}/cancel", false, s.reply(s.handleCancel)},
		{"GET /v1/sessions/{id}/verify", false, s.reply(s.handleVerify)},
	}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

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

// instrument wraps an endpoint: authentication (answered before the
// body is read), the body's size and time bounds, a recovered panic as a
// 500, and the request metrics.
func (s *Server) instrument(pattern string, open bool, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w.Header().Set("X-Content-Type-Options", "nosniff")
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
		if !open {
			p, ok := s.authenticate(r)
			if !ok {
				s.writeError(sw, r, apiError(http.StatusUnauthorized, CodeUnauthorized, "a bearer token is required (Authorization: Bearer TOKEN)"))
				return
			}
			r = r.WithContext(withPrincipal(r.Context(), p))
		}
		bound(sw, r, s.opts.MaxBody, s.opts.BodyTimeout)
		h(sw, r)
	})
}

// authenticate returns who made r: through [Options].Auth when set, else
// an admin for any of the tokens, else [LocalPrincipal].
func (s *Server) authenticate(r *http.Request) (Principal, bool) {
	if s.opts.Auth != nil {
		p, err := s.opts.Auth.Authenticate(r)
		return p, err == nil
	}
	if len(s.tokens) == 0 {
		return LocalPrincipal, true
	}
	if !s.authorized(r) {
		return Principal{}, false
	}
	return Principal{Name: "token", Tenant: DefaultTenant, Roles: []Role{RoleAdmin}}, true
}

// authorized reports whether r carries one of the tokens. Each comparison
// takes the same time whatever the bytes.
func (s *Server) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	ok = false
	for _, t := range s.tokens {
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), t) == 1 {
			ok = true
		}
	}
	return ok
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
				h.Set("Access-Control-Allow-Methods", "GET, POST")
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
// without tokens.
var ErrOpenBind = errors.New("server: refusing to listen beyond loopback without tokens")

// CheckBind refuses to serve on a non-loopback address without tokens:
// anyone who can reach it could run the agent's tools.
func CheckBind(addr string, tokens []string) error {
	if len(tokens) > 0 || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("%w: %s (give --token-file or VIGIL_TOKENS, or bind 127.0.0.1)", ErrOpenBind, addr)
}

// sessionID returns the {id} of r's path, checked.
func sessionID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !session.ValidID(id) {
		return "", apiError(http.StatusBadRequest, CodeBadRequest, "%q is not a session id (1 to 128 letters, digits, '-' and '_')", id)
	}
	return id, nil
}
