package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/internal/hostcheck"
)

// CodeUnavailable: the store does not answer now (503).
const CodeUnavailable = "unavailable"

// requestIDKey is the context key of a request's id.
type requestIDKey struct{}

// newRequestID returns a fresh request id: 16 hex digits.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// withRequestID gives r an id, in its context and in the response's
// X-Request-Id header: a client quotes it, the log line of a failed
// request carries it.
func withRequestID(w http.ResponseWriter, r *http.Request) *http.Request {
	id := newRequestID()
	w.Header().Set("X-Request-Id", id)
	return r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
}

// requestID is the id of the request ctx belongs to, or a new one for a
// request that has none (one no route matched).
func requestID(ctx context.Context) string {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		return id
	}
	return newRequestID()
}

// health is the body of /healthz and /readyz.
type health struct {
	Status string `json:"status"`
}

// handleHealth answers /healthz: the process lives and serves.
func handleHealth(_ http.ResponseWriter, _ *http.Request) (int, any, error) {
	return http.StatusOK, health{"ok"}, nil
}

// ready answers /readyz for rt: 200 once its store answers a round trip
// ([vigil.Runtime.Ready]), else 503 unavailable.
func ready(rt *vigil.Runtime) replier {
	return func(_ http.ResponseWriter, r *http.Request) (int, any, error) {
		if err := rt.Ready(r.Context()); err != nil {
			return 0, nil, &unready{err}
		}
		return http.StatusOK, health{"ready"}, nil
	}
}

// unready is a failed readiness check: always 503, whatever the store's
// error says.
type unready struct{ err error }

func (e *unready) Error() string { return fmt.Sprintf("the store does not answer: %v", e.err) }
func (e *unready) Unwrap() error { return e.err }

// probeRoutes are the operator's endpoints, served by the API and by
// [NewProbes] alike.
func (s *Server) probeRoutes() []route {
	return []route{
		{"GET /healthz", open, s.reply(handleHealth)},
		{"GET /readyz", open, s.reply(ready(s.rt))},
		{"GET /metrics", RoleAdmin, s.handleMetrics},
	}
}

// NewProbes returns the operator's endpoints of a process that serves no
// API (vigil worker): /healthz, /readyz and /metrics (o.Metrics), open to
// whoever reaches the address. Like [New]'s, it answers only a Host that
// names o.Addr or one of o.AllowedHosts (loopback names, when o.Addr is
// empty); of the rest of o it uses the Logger.
func NewProbes(rt *vigil.Runtime, o Options) http.Handler {
	s := &Server{rt: rt, opts: Options{Metrics: o.Metrics, Logger: o.Logger}, log: o.Logger, mux: http.NewServeMux(),
		hosts: hostcheck.New(o.Addr, o.AllowedHosts)}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	for _, rt := range s.probeRoutes() {
		s.mux.Handle(rt.pattern, s.instrument(rt.pattern, open, rt.h))
	}
	s.mux.HandleFunc("/", s.noRoute)
	s.handler = s.mux
	return s
}
