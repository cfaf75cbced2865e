package playground

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/compaction"
	"github.com/vigil-run/vigil/plugins/store/memory"
	"github.com/vigil-run/vigil/session/live"
)

// DefaultDelay is how long Play shows each event before the next commits.
const DefaultDelay = 350 * time.Millisecond

// Options configure a [Server]. The zero value is ready to use.
type Options struct {
	// Delay is the time between two events while playing (default
	// DefaultDelay).
	Delay time.Duration
	// Logger receives the runtime's logs (default: discarded).
	Logger hclog.Logger
	// Hosts are the host names, besides the loopback ones (127.0.0.1,
	// [::1], localhost), that a request may name in its Host header: the
	// names of the address the playground is served on when it is not
	// loopback. Any other Host is refused (403), whatever the port.
	Hosts []string
}

// Server is the playground: the runtime it drives and the page it serves.
// It implements http.Handler. Its methods are safe for concurrent use.
type Server struct {
	opts Options
	root *bus.Root
	c    *bus.Context
	mgr  *live.Manager
	mux  *http.ServeMux
	gd   guard

	// base is cancelled by Close: it bounds every run.
	base   context.Context
	cancel context.CancelFunc
	swept  chan struct{} // closed when the janitor has returned

	// vmu guards the visitors, the sessions they own and closed.
	vmu      sync.Mutex
	visitors map[string]*visitor
	owners   map[string]*visitor // session id → the visitor it is shown to
	closed   bool
	now      func() time.Time
}

// New builds the runtime — the invariants plugin in strict mode, the
// store/memory plugin, the approvals plugin and the compaction plugin,
// scoped to the demo session — and returns a playground ready to serve. Close releases it.
func New(opts Options) (*Server, error) {
	if opts.Delay <= 0 {
		opts.Delay = DefaultDelay
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	s := &Server{opts: opts, gd: newGuard(opts.Hosts), visitors: map[string]*visitor{}, owners: map[string]*visitor{}, now: time.Now, swept: make(chan struct{})}
	s.base, s.cancel = context.WithCancel(context.Background())
	s.root = bus.New(bus.WithLogger(opts.Logger))
	s.c = s.root.Context()
	if err := s.compose(); err != nil {
		s.cancel()
		return nil, errors.Join(fmt.Errorf("playground: %w", err), s.root.Dispose())
	}
	s.routes()
	go s.janitor(s.swept)
	return s, nil
}

// compose applies the plugins. The invariants plugin comes first, so that
// its listeners are in place before any session exists. The page's
// tampering listener is a veto listener prepended in front of its check.
func (s *Server) compose() error {
	if _, err := s.c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict}); err != nil {
		return err
	}
	if _, err := s.c.Plugin(memory.Plugin, nil); err != nil {
		return err
	}
	mgr, err := live.Sessions.Get(s.c)
	if err != nil {
		return err
	}
	s.mgr = mgr
	// Every session's calc calls wait for the visitor's decision (see
	// approvalConfig); the policy is logged in each, so that verify
	// proves no calc ran without one.
	if _, err := s.c.Plugin(approvals.Plugin, approvalConfig); err != nil {
		return err
	}
	// Only the demos compact: a fork must keep the log the page compares.
	demoOnly := s.c.Scope(func(subject any) bool { id, ok := subject.(string); return ok && s.isDemo(id) })
	if _, err := demoOnly.Plugin(compaction.Plugin, compactionConfig); err != nil {
		return err
	}
	// A commit goes to the visitor its session is shown to (see track),
	// held first by that visitor's pacer when it is the visitor's demo.
	_, err = s.c.Plugin(bus.PluginFunc("playground", func(c *bus.Context, _ struct{}) error {
		live.Committed.On(c, func(_ context.Context, cm live.Commit) error {
			if v := s.ownerOf(cm.Session().ID()); v != nil {
				v.pl.hold(cm.Session().ID())
				v.hub.publish(cm.Session().ID(), cm.Record())
			}
			return nil
		})
		return nil
	}), nil)
	return err
}

// Close stops every visitor's demo, ends the pages' event streams and
// disposes the runtime.
func (s *Server) Close() error {
	s.vmu.Lock()
	if s.closed {
		s.vmu.Unlock()
		return nil
	}
	s.closed = true
	vs := make([]*visitor, 0, len(s.visitors))
	for _, v := range s.visitors {
		vs = append(vs, v)
	}
	s.visitors, s.owners = map[string]*visitor{}, map[string]*visitor{}
	s.vmu.Unlock()
	for _, v := range vs {
		// The sessions are left to the runtime's disposal.
		v.act.Lock()
		if !v.gone.Swap(true) {
			v.pl.stop()
			v.hub.close()
		}
		v.act.Unlock()
	}
	s.cancel()
	<-s.swept
	return s.root.Dispose()
}

// ServeHTTP implements http.Handler. A request for another host than
// loopback and Options.Hosts, and an action (a POST, or any request to an
// action's path) whose Origin header is present and names another host
// than the request's, are refused with 403 and the reason.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if why := s.gd.check(r); why != "" {
		writeJSON(w, statusRefused, map[string]string{"error": why})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Serve serves the playground on ln until ctx is done, then closes the
// playground and shuts the HTTP server down. It returns nil after a clean
// stop.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return s.base }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	// Closing first ends the event streams, which Shutdown would wait for.
	cerr := s.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil && err == nil {
		err = serr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, cerr)
}
