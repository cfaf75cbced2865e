package main

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	return cmd
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
	if o.workers < 0 {
		return usagef("--workers must be 0 or more")
	}
	if o.maxBody <= 0 {
		return usagef("--max-body must be positive")
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
	metrics, err := server.NewMetrics()
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
	hs := server.HTTPServer(srv) // bounded headers, bodies and idle connections
	hs.BaseContext = func(net.Listener) context.Context { return streams }
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	worked := make(chan error, 1)
	if o.workers > 0 {
		go func() {
			worked <- h.rt.Work(ctx, vigil.WorkOptions{Concurrency: o.workers, OnJob: metrics.OnJob()})
		}()
	} else {
		worked <- nil
	}
	fmt.Fprintf(e.stderr, "vigil serve: the API is at http://%s/v1 (%s)\n", ln.Addr(), workersNote(o.workers))
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintf(e.stderr, "vigil serve: stopping: %v\n", context.Cause(ctx))
	stopStreams()
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.drain)
	defer cancel()
	serr := hs.Shutdown(shut)
	if serr != nil && !errors.Is(serr, context.DeadlineExceeded) {
		return serr
	}
	return drained(shut, worked, o.drain)
}

func workersNote(n int) string {
	if n == 0 {
		return "no worker here: 'vigil worker' processes run the turns"
	}
	return fmt.Sprintf("%d jobs at once in this process", n)
}

// drained waits for the workers to finish their running jobs until ctx
// is done; then the process exits and their turns are continued by the
// next worker.
func drained(ctx context.Context, worked <-chan error, limit time.Duration) error {
	select {
	case err := <-worked:
		return err
	case <-ctx.Done():
		return &abandonedError{limit}
	}
}

// abandonedError: the drain ran out with turns still running. The
// process exits without closing the runtime, which would end those turns
// aborted: they are left as a crash leaves them, for the next worker to
// continue once their leases are gone.
type abandonedError struct{ limit time.Duration }

func (e *abandonedError) Error() string {
	return fmt.Sprintf("turns still ran after %s; the next worker continues them", e.limit)
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
	cmd.Flags().DurationVar(&o.drain, "drain", defaultDrain, "how long to wait for running turns on SIGTERM")
	return cmd
}

func cmdWorker(ctx context.Context, e *env, o workerOptions) (err error) {
	if o.concurrency < 1 {
		return usagef("--concurrency must be 1 or more")
	}
	h, err := openHost(e, o.cfg)
	if err != nil {
		return err
	}
	defer closeUnlessAbandoned(h, &err)
	if kind, shared := sharedStore(h.rt); !shared {
		return usagef("a worker runs the turns of a store several processes share (store/postgres); %s is one process's ('vigil serve' runs its turns itself)", kind)
	}
	worked := make(chan error, 1)
	go func() {
		worked <- h.rt.Work(ctx, vigil.WorkOptions{Worker: o.name, Concurrency: o.concurrency})
	}()
	fmt.Fprintf(e.stderr, "vigil worker: running queued turns (%d at once)\n", o.concurrency)
	select {
	case err := <-worked:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintf(e.stderr, "vigil worker: stopping: %v\n", context.Cause(ctx))
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.drain)
	defer cancel()
	return drained(shut, worked, o.drain)
}
