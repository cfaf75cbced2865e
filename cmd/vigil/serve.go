package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/internal/hostcheck"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/webui"
)

// defaultServeAddr is loopback: beyond it the API needs tokens.
const defaultServeAddr = "127.0.0.1:8080"

// defaultDrain is how long a stopping server or worker waits for its
// running turns before it exits and leaves them to another worker.
const defaultDrain = 30 * time.Second

type serveOptions struct {
	cfg, addr, tokenFile string
	oidc                 server.OIDCConfig
	oidcClientID         string
	oidcScopes           []string
	allowedHosts         []string
	workers              int
	cors                 []string
	maxBody              int64
	drain                time.Duration
	approvalTTL          time.Duration
	checkpointKeys       []string
}

func newServeCmd(e *env) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API: sessions, queued turns, event streams, approvals",
		Long: `Serve Vigil's HTTP API (under /v1; its OpenAPI 3.1 description at
/openapi.json), and a web UI over it at /ui/ (sessions, approvals inbox,
timelines, step requests, replay, traces, usage), until SIGTERM or
Ctrl-C. Turns posted to it are queued in the
composition's store and run by workers: --workers of them in this process
(the default, with the JSONL store: one process, no database), or, with
--workers 0 and a store shared by several processes (store/postgres), by
'vigil worker' processes on any machine. The composition's agents are also
served over MCP at /mcp and over A2A at /a2a/AGENT (each agent's card at
/a2a/AGENT/.well-known/agent-card.json), behind the same authentication.

Every request is made by a principal (a name, a tenant, roles: viewer,
user, approver, admin): the one a bearer token names in --token-file (lines
'name tenant roles token', roles comma-separated; # comments; read again on
SIGHUP, keeping the tokens in force when the file is wrong) or in
VIGIL_TOKENS (entries in the same format, separated by ';' or newlines), or
the one a JWT of the --oidc-issuer names (verified against the issuer's
keys, for --oidc-audience). Both may be given: a JWT goes to the issuer, any
other token to the file. Without either, every caller is the local admin.

It listens on loopback unless --addr says otherwise, and refuses a
non-loopback address without authentication. It answers only requests whose
Host names the address it binds (on loopback: 127.0.0.1, localhost or [::1]
at its port) or an --allowed-host, and POSTs only with Content-Type:
application/json, so a web page of another site cannot drive it. On SIGTERM
it stops taking requests and work, lets the running turns finish (up to
--drain), and exits; a turn still running then is continued by the next
worker, as after a crash.`,
		Example: `  vigil serve
  vigil serve --addr 0.0.0.0:8080 --token-file tokens.txt --cors-origin https://app.example
  vigil serve --addr 0.0.0.0:8080 --oidc-issuer https://id.example.com --oidc-audience vigil \
    --oidc-name-claim email --oidc-tenant-claim org --allowed-host vigil.example.com
  vigil serve -c pg.yaml --workers 0   # API only; run 'vigil worker -c pg.yaml' elsewhere`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return cmdServe(cmd.Context(), e, o)
		}),
	}
	configFlag(cmd, &o.cfg)
	cmd.Flags().StringVar(&o.addr, "addr", defaultServeAddr, "the address to listen on (host:port; port 0 picks a free one)")
	cmd.Flags().IntVar(&o.workers, "workers", 4, "jobs this process runs at once; 0 runs none (API only: needs a store shared with 'vigil worker' processes)")
	cmd.Flags().StringVar(&o.tokenFile, "token-file", "", "a file of bearer tokens, a line 'name tenant roles token' each (# comments), read again on SIGHUP; VIGIL_TOKENS adds more")
	cmd.Flags().StringVar(&o.oidc.Issuer, "oidc-issuer", "", "an OpenID Connect issuer URL whose signed JWTs are accepted as bearer tokens")
	cmd.Flags().StringVar(&o.oidc.Audience, "oidc-audience", "", "the audience (aud) the issuer's tokens must name: this API's client ID or identifier")
	cmd.Flags().StringVar(&o.oidc.NameClaim, "oidc-name-claim", "sub", "the claim naming the principal (e.g. email)")
	cmd.Flags().StringVar(&o.oidc.TenantClaim, "oidc-tenant-claim", "", "the claim giving the principal's tenant (none: every principal is in tenant default)")
	cmd.Flags().StringVar(&o.oidc.RolesClaim, "oidc-roles-claim", "roles", "the claim listing the principal's roles (a list, or a string separated by spaces or commas; a dotted name reaches a nested claim)")
	cmd.Flags().StringVar(&o.oidcClientID, "oidc-client-id", "", "the client ID the web UI logs in with at the issuer (a public client: authorization code with PKCE, no secret; default: --oidc-audience, which its ID tokens must name)")
	cmd.Flags().StringSliceVar(&o.oidcScopes, "oidc-scope", webui.DefaultScopes, "the scopes the web UI asks the issuer for (repeatable or comma-separated)")
	cmd.Flags().StringArrayVar(&o.allowedHosts, "allowed-host", nil, "a Host header value served besides the bound address's (repeatable; host, or host:port), such as the name a proxy forwards")
	cmd.Flags().StringArrayVar(&o.cors, "cors-origin", nil, "an origin browsers may call the API from (repeatable; * for any); none: no cross-origin calls")
	cmd.Flags().StringArrayVar(&o.checkpointKeys, "checkpoint-key", nil, "check sessions' signed checkpoints with this public key (or a file holding it) when the API shows a step's request; repeatable")
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

// authenticator returns who may call the API: the tokens of --token-file
// and VIGIL_TOKENS (returned too, for reloading), the issuer's JWTs, both
// chained, or nil (no authentication).
func authenticator(ctx context.Context, e *env, o serveOptions) (server.Authenticator, *server.Tokens, error) {
	var auths []server.Authenticator
	var tokens *server.Tokens
	if env := e.getenv("VIGIL_TOKENS"); o.tokenFile != "" || strings.TrimSpace(env) != "" {
		var err error
		if tokens, err = server.NewTokens(o.tokenFile, env); err != nil {
			return nil, nil, &configError{err}
		}
		auths = append(auths, tokens)
	}
	if o.oidc.Issuer != "" || o.oidc.Audience != "" {
		oidc, err := server.NewOIDC(ctx, o.oidc)
		if err != nil {
			return nil, nil, &configError{err}
		}
		auths = append(auths, oidc)
	}
	switch len(auths) {
	case 0:
		return nil, nil, nil
	case 1:
		return auths[0], tokens, nil
	}
	return server.Chain(auths...), tokens, nil
}

// uiConfig is what the web UI is told of the login: the issuer and the
// client to log in with, when the API takes OpenID Connect tokens.
func uiConfig(o serveOptions) webui.Config {
	if o.oidc.Issuer == "" {
		return webui.Config{}
	}
	client := o.oidcClientID
	if client == "" {
		client = o.oidc.Audience
	}
	return webui.Config{OIDC: &webui.OIDC{Issuer: o.oidc.Issuer, ClientID: client, Scopes: o.oidcScopes}}
}

// reloadOnHangup makes SIGHUP read the token file again; a file that
// fails keeps the tokens in force, and the error is logged.
func reloadOnHangup(e *env, tokens *server.Tokens, file string, log hclog.Logger) (release func()) {
	if tokens == nil || file == "" {
		return func() {}
	}
	return e.interrupts.takeOverSignal(syscall.SIGHUP, func() {
		if err := tokens.Reload(); err != nil {
			log.Error("reloading the token file failed; the tokens in force are kept", "file", file, "error", err)
			return
		}
		fmt.Fprintf(e.stderr, "vigil serve: reloaded %s: %d tokens in force\n", file, tokens.Len())
	})
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
	var keys note.Verifiers
	if len(o.checkpointKeys) > 0 {
		if keys, err = verifiersOf(o.checkpointKeys); err != nil {
			return err
		}
	}
	auth, tokens, err := authenticator(ctx, e, o)
	if err != nil {
		return err
	}
	if err := server.CheckBind(o.addr, auth); err != nil {
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
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	srv, err := server.New(h.rt, server.Options{Auth: auth, Addr: ln.Addr().String(), AllowedHosts: allowedHosts(o.allowedHosts, o.addr, ln.Addr()),
		CORSOrigins: o.cors, MaxBody: o.maxBody, Metrics: metrics, Logger: h.log.Named("server"), CheckpointKeys: keys,
		UI: webui.Handler(uiConfig(o))})
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer reloadOnHangup(e, tokens, o.tokenFile, h.log.Named("server"))()
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
			worked <- h.rt.Work(ctx, vigil.WorkOptions{Concurrency: o.workers, OnJob: metrics.OnJob(), ApprovalTTL: o.approvalTTL, Drain: max(o.drain, time.Nanosecond)}) // --drain 0: hand back at once
		}()
	} else {
		worked <- nil
	}
	retention, stopRetention := context.WithCancel(ctx)
	pruned := make(chan struct{})
	go func() {
		defer close(pruned)
		keepRetention(retention, h.rt, h.log.Named("retention"), pruneEvery)
	}()
	defer func() { stopRetention(); <-pruned }() // before the runtime closes
	e.notef("vigil serve: the API is at http://%s/v1 (%s); the web UI at http://%s/ui/", ln.Addr(), workersNote(o.workers), ln.Addr())
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

// allowedHosts are the Host header values served besides the bound
// address's names: --allowed-host, and the host --addr names (a name
// that resolves to the address bound) at the port bound.
func allowedHosts(allowed []string, addr string, bound net.Addr) []string {
	out := slices.Clone(allowed)
	if _, port, err := net.SplitHostPort(bound.String()); err == nil {
		for _, h := range hostcheck.Names(addr) {
			out = append(out, net.JoinHostPort(h, port))
		}
	}
	return out
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
	// allowedHosts are the Host header values the probes answer besides
	// the metrics address's names.
	allowedHosts []string
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
	cmd.Flags().StringArrayVar(&o.allowedHosts, "allowed-host", nil, "a Host header value the metrics address answers besides its own names (repeatable; host, or host:port), such as a scraper's service name")
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
		addr, stop, err := serveProbes(h, metrics, o.metricsAddr, o.allowedHosts)
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
