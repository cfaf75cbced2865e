package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// defaultServeAddr is loopback: beyond it the API needs tokens.
const defaultServeAddr = "127.0.0.1:8080"

// defaultDrain is how long a stopping server or worker waits for its
// running turns before it exits and leaves them to another worker.
const defaultDrain = 30 * time.Second

type serveOptions struct {
	cfg, addr, tokenFile string
	workers              int
	cors                 []string
	maxBody              int64
	drain                time.Duration
	approvalTTL          time.Duration
}

func newServeCmd(e *env) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API: sessions, queued turns, event streams, approvals",
		Long: `Serve Vigil's HTTP API (under /v1; its OpenAPI 3.1 description at
/openapi.json) until SIGTERM or Ctrl-C. Turns posted to it are queued in the
composition's store and run by workers: --workers of them in this process
(the default, with the JSONL store: one process, no database), or, with
--workers 0 and a store shared by several processes (store/postgres), by
'vigil worker' processes on any machine.

It listens on loopback unless --addr says otherwise, and refuses a
non-loopback address without tokens (--token-file, one per line, or
VIGIL_TOKENS, separated by commas or spaces). On SIGTERM it stops taking
requests and work, lets the running turns finish (up to --drain), and exits;
a turn still running then is continued by the next worker, as after a crash.`,
		Example: `  vigil serve
  vigil serve --addr 0.0.0.0:8080 --token-file tokens.txt --cors-origin https://app.example
  vigil serve -c pg.yaml --workers 0   # API only; run 'vigil worker -c pg.yaml' elsewhere`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return cmdServe(cmd.Context(), e, o)
		}),
	}
	configFlag(cmd, &o.cfg)
	cmd.Flags().StringVar(&o.addr, "addr", defaultServeAddr, "the address to listen on (host:port; port 0 picks a free one)")
	cmd.Flags().IntVar(&o.workers, "workers", 4, "jobs this process runs at once; 0 runs none (API only: needs a store shared with 'vigil worker' processes)")
	cmd.Flags().StringVar(&o.tokenFile, "token-file", "", "a file of bearer tokens, one per line (# comments); VIGIL_TOKENS adds more")
	cmd.Flags().StringArrayVar(&o.cors, "cors-origin", nil, "an origin browsers may call the API from (repeatable; * for any); none: no cross-origin calls")
	cmd.Flags().Int64Var(&o.maxBody, "max-body", server.DefaultMaxBody, "the largest request body accepted, in bytes")
	cmd.Flags().DurationVar(&o.drain, "drain", defaultDrain, "how long to wait for running turns on SIGTERM")
	approvalTTLFlag(cmd, &o.approvalTTL)
	logFormatFlag(cmd, e)
	return cmd
}

// approvalTTLFlag is --approval-ttl, of serve and worker.
func approvalTTLFlag(cmd *cobra.Command, ttl *time.Duration) {
	cmd.Flags().DurationVar(ttl, "approval-ttl", 0, "deny a tool call that waits longer than this for a decision (0: wait forever)")
}

// loadTokens reads the tokens of --token-file and VIGIL_TOKENS.
func loadTokens(e *env, file string) ([]string, error) {
	var out []string
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, &configError{fmt.Errorf("--token-file: %w", err)}
		}
		for line := range strings.Lines(string(data)) {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				out = append(out, t)
			}
		}
		if len(out) == 0 {
			return nil, &configError{fmt.Errorf("--token-file %s holds no token", file)}
		}
	}
	out = append(out, strings.FieldsFunc(e.getenv("VIGIL_TOKENS"), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n'
	})...)
	return out, nil
}

// sharedStore reports whether the runtime's store is one several
// processes share safely: its leases are fenced, so a worker elsewhere
// can run a session's turn while this process serves it.
func sharedStore(rt *vigil.Runtime) (string, bool) {
	mgr, err := rt.Manager()
	if err != nil {
		return "", false
	}
	_, ok := mgr.Store().(session.Fencer)
	return fmt.Sprintf("%T", mgr.Store()), ok
}

func cmdServe(ctx context.Context, e *env, o serveOptions) (err error) {
	if err := checkLogFormat(e); err != nil {
		return err
	}
	if o.workers < 0 {
		return usagef("--workers must be 0 or more")
	}
	if o.maxBody <= 0 {
		return usagef("--max-body must be positive")
	}
	if o.approvalTTL < 0 {
		return usagef("--approval-ttl must be 0 or more")
	}
	if o.approvalTTL > 0 && o.workers == 0 {
		return usagef("--approval-ttl is kept by the workers: with --workers 0, give it to 'vigil worker'")
	}
	tokens, err := loadTokens(e, o.tokenFile)
	if err != nil {
		return err
	}
	if err := server.CheckBind(o.addr, tokens); err != nil {
		return usageError{err}
	}
	h, err := openHost(e, o.cfg)
	if err != nil {
		return err
	}
	defer closeUnlessAbandoned(h, &err)
	if kind, shared := sharedStore(h.rt); o.workers == 0 && !shared {
		return usagef("--workers 0 runs no worker here, so the turns must run in 'vigil worker' processes sharing the store; %s is this process's alone (use store/postgres)", kind)
	}
	metrics, err := processMetrics(h)
	if err != nil {
		return err
	}
	defer metrics.Shutdown(context.WithoutCancel(ctx))
	srv, err := server.New(h.rt, server.Options{Tokens: tokens, CORSOrigins: o.cors, MaxBody: o.maxBody, Metrics: metrics, Logger: h.log.Named("server")})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	// Streams end when the server stops, not only when clients leave.
	streams, stopStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStreams()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return streams }}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	worked := make(chan error, 1)
	if o.workers > 0 {
		go func() {
			worked <- h.rt.Work(ctx, vigil.WorkOptions{Concurrency: o.workers, OnJob: metrics.OnJob(), ApprovalTTL: o.approvalTTL, Drain: max(o.drain, time.Nanosecond)}) // --drain 0: hand back at once
		}()
	} else {
		worked <- nil
	}
	e.notef("vigil serve: the API is at http://%s/v1 (%s)", ln.Addr(), workersNote(o.workers))
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	e.notef("vigil serve: stopping: %v", context.Cause(ctx))
	stopStreams()
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.drain)
	defer cancel()
	serr := hs.Shutdown(shut)
	if serr != nil && !errors.Is(serr, context.DeadlineExceeded) {
		return serr
	}
	return drained(worked, o.drain)
}

func workersNote(n int) string {
	if n == 0 {
		return "no worker here: 'vigil worker' processes run the turns"
	}
	return fmt.Sprintf("%d jobs at once in this process", n)
}

// drained waits for the workers to finish their running jobs: Work
// waits for them up to the drain, then hands those still running back to
// the queue, whose next worker continues them at once. Should the
// hand-back itself hang (a store that does not answer), the process
// leaves after a grace period as a crash would.
func drained(worked <-chan error, limit time.Duration) error {
	select {
	case err := <-worked:
		if errors.Is(err, vigil.ErrHandedBack) {
			return &abandonedError{limit}
		}
		return err
	case <-time.After(limit + handBackGrace):
		return &abandonedError{limit}
	}
}

// handBackGrace is how long past the drain a stopping process waits for
// its jobs to be handed back.
const handBackGrace = 30 * time.Second

// abandonedError: the drain ran out with turns still running, which were
// handed back. The process exits without closing the runtime, which would
// end those turns aborted: they are left as a crash leaves them, for the
// next worker to continue.
type abandonedError struct{ limit time.Duration }

func (e *abandonedError) Error() string {
	return fmt.Sprintf("turns still ran after %s; they were handed back for the next worker to continue", e.limit)
}

// closeUnlessAbandoned closes h unless *err says its turns were abandoned.
func closeUnlessAbandoned(h *host, err *error) {
	if !errors.As(*err, new(*abandonedError)) {
		if cerr := h.close(); cerr != nil && *err == nil {
			*err = cerr
		}
	}
}

type workerOptions struct {
	cfg, name   string
	concurrency int
	drain       time.Duration
	approvalTTL time.Duration
	metricsAddr string
}

func newWorkerCmd(e *env) *cobra.Command {
	var o workerOptions
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run queued turns from a store shared with 'vigil serve'",
		Long: `Run the turns queued in the composition's store (by 'vigil serve' on this
machine or another) until SIGTERM or Ctrl-C. The store must be one several
processes share (store/postgres). Each turn runs under its session's lease;
when a worker dies mid-turn, another continues the turn once the lease
expires. On SIGTERM the worker takes no more turns, finishes the running ones
(up to --drain) and exits.`,
		Example: `  vigil worker -c pg.yaml --concurrency 8`,
		Args:    noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return cmdWorker(cmd.Context(), e, o)
		}),
	}
	configFlag(cmd, &o.cfg)
	cmd.Flags().IntVar(&o.concurrency, "concurrency", 4, "jobs run at once")
	cmd.Flags().StringVar(&o.name, "name", "", "the worker's name in the queue (default host:pid)")
	cmd.Flags().StringVar(&o.metricsAddr, "metrics-addr", "", "serve /metrics, /healthz and /readyz on this address (host:port), open to whoever reaches it; none: no HTTP")
	cmd.Flags().DurationVar(&o.drain, "drain", defaultDrain, "how long to wait for running turns on SIGTERM")
	approvalTTLFlag(cmd, &o.approvalTTL)
	logFormatFlag(cmd, e)
	return cmd
}

func cmdWorker(ctx context.Context, e *env, o workerOptions) (err error) {
	if err := checkLogFormat(e); err != nil {
		return err
	}
	if o.concurrency < 1 {
		return usagef("--concurrency must be 1 or more")
	}
	if o.approvalTTL < 0 {
		return usagef("--approval-ttl must be 0 or more")
	}
	h, err := openHost(e, o.cfg)
	if err != nil {
		return err
	}
	defer closeUnlessAbandoned(h, &err)
	if kind, shared := sharedStore(h.rt); !shared {
		return usagef("a worker runs the turns of a store several processes share (store/postgres); %s is one process's ('vigil serve' runs its turns itself)", kind)
	}
	metrics, err := processMetrics(h)
	if err != nil {
		return err
	}
	defer metrics.Shutdown(context.WithoutCancel(ctx))
	if o.metricsAddr != "" {
		addr, stop, err := serveProbes(h, metrics, o.metricsAddr)
		if err != nil {
			return err
		}
		defer stop()
		e.notef("vigil worker: metrics at http://%s/metrics", addr)
	}
	worked := make(chan error, 1)
	go func() {
		worked <- h.rt.Work(ctx, vigil.WorkOptions{Worker: o.name, Concurrency: o.concurrency, OnJob: metrics.OnJob(), ApprovalTTL: o.approvalTTL, Drain: max(o.drain, time.Nanosecond)}) // --drain 0: hand back at once
	}()
	e.notef("vigil worker: running queued turns (%d at once)", o.concurrency)
	select {
	case err := <-worked:
		return err
	case <-ctx.Done():
	}
	e.notef("vigil worker: stopping: %v", context.Cause(ctx))
	return drained(worked, o.drain)
}
