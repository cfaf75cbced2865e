package external

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
)

// conn is one running plugin process and the gRPC client of its Plugin
// service.
type conn struct {
	path         string
	timeout      time.Duration
	startTimeout time.Duration
	log          hclog.Logger

	client   *plugin.Client
	proc     *process
	rpc      pluginpb.PluginClient
	scorer   pluginpb.ScorerClient
	broker   *plugin.GRPCBroker
	lifeline *os.File // the write end; the plugin exits when it closes
	sockDir  string

	stopping atomic.Bool
	stop     chan struct{}

	mu      sync.Mutex
	hostSrv *grpc.Server
}

// handshake is the go-plugin handshake of the protocol this host speaks.
var handshake = plugin.HandshakeConfig{
	ProtocolVersion:  pluginpb.ProtocolVersion,
	MagicCookieKey:   pluginpb.MagicCookieKey,
	MagicCookieValue: pluginpb.MagicCookieValue,
}

// killGrace bounds how long a disposal waits for go-plugin's graceful
// shutdown before it kills the process itself.
const killGrace = 5 * time.Second

// start runs the plugin binary and completes the handshake. log is the
// fiber's logger.
func start(cfg *Config, log hclog.Logger) (_ *conn, err error) {
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("external: %w", err)
	}
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("external: %w", err)
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("external: %s is not an executable file", path)
	}
	sockDir, err := os.MkdirTemp("", "vigil-plugin-")
	if err != nil {
		return nil, fmt.Errorf("external: %w", err)
	}
	var pin *pinned
	if cfg.SHA256 != "" {
		if pin, err = pinBinary(path, cfg.SHA256, sockDir); err != nil {
			_ = os.RemoveAll(sockDir)
			return nil, err
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		pin.close()
		_ = os.RemoveAll(sockDir)
		return nil, fmt.Errorf("external: lifeline: %w", err)
	}
	// go-plugin names the plugin's stderr logger after the binary itself.
	cn := &conn{path: path, timeout: cfg.timeout(), startTimeout: cfg.startTimeout(), log: log.Named(filepath.Base(path)), lifeline: w, sockDir: sockDir, stop: make(chan struct{})}
	env := append(cfg.environ(os.LookupEnv), pluginpb.LogLevelEnv+"="+strings.ToLower(log.GetLevel().String()))
	if hasLifeline {
		env = append(env, pluginpb.LifelineEnv+"=3")
	}
	cn.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: handshake,
		Plugins:         plugin.PluginSet{pluginpb.PluginName: &hostPlugin{}},
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			cmd := exec.Command(path, cfg.Args...)
			cmd.Env = append(spec.Env, env...)
			p, err := newProcess(cmd, r, pin)
			cn.proc = p
			return p, err
		},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     cn.startTimeout,
		Logger:           log,
		SyncStdout:       &lineLogger{log: log, stream: "stdout"},
		SyncStderr:       &lineLogger{log: log, stream: "stderr"},
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: sockDir},
	})
	defer func() {
		if err != nil {
			cn.close()
			if cn.proc == nil {
				_ = r.Close()
				pin.close()
			}
		}
	}()
	begun := time.Now()
	rc, err := cn.client.Client()
	if err != nil {
		return cn, cn.explain(err, time.Since(begun))
	}
	raw, err := rc.Dispense(pluginpb.PluginName)
	if err != nil {
		return cn, fmt.Errorf("%w: %s: %w", ErrHandshake, path, err)
	}
	hc := raw.(*hostClient)
	cn.rpc, cn.scorer, cn.broker = hc.rpc, hc.scorer, hc.broker
	return cn, nil
}

// explain turns go-plugin's start failure into the adapter's errors,
// from what the process actually did.
func (cn *conn) explain(err error, took time.Duration) error {
	p := cn.proc
	if p == nil {
		return fmt.Errorf("%w: starting %s: %w", ErrHandshake, cn.path, err)
	}
	if line, ok := p.first.line(); ok {
		parts := strings.Split(strings.TrimSpace(line), "|")
		core, cerr := strconv.Atoi(parts[0])
		if len(parts) < 4 || cerr != nil {
			return fmt.Errorf("%w: %w: %s wrote %q (a plugin must not print to stdout before serving; log to stderr)", ErrHandshake, ErrStrayOutput, cn.path, line)
		}
		if app, aerr := strconv.Atoi(parts[1]); aerr == nil && core == plugin.CoreProtocolVersion && app != pluginpb.ProtocolVersion {
			return &VersionError{Path: cn.path, Plugin: app, Host: pluginpb.ProtocolVersion}
		}
	}
	if took >= cn.startTimeout {
		return fmt.Errorf("%w: %w: %s did not complete the handshake within %s", ErrHandshake, ErrTimeout, cn.path, cn.startTimeout)
	}
	// No handshake line: the process closed its stdout, which it does
	// when it exits (and go-plugin kills it on a failed start). Its exit
	// status and stderr are complete once its exit is observed, which on a
	// busy machine can take a while: wait within the start's bound.
	if cn.awaitExit(cn.startTimeout) {
		msg := fmt.Sprintf("%s exited before the handshake", cn.path)
		if e := p.exitErr(); e != nil {
			msg += " (" + e.Error() + ")"
		}
		if last := p.tail.lastLine(); last != "" {
			msg += ": " + last
		}
		return fmt.Errorf("%w: %w: %s", ErrHandshake, ErrExited, msg)
	}
	return fmt.Errorf("%w: %s: %w", ErrHandshake, cn.path, err)
}

// close disposes the plugin: the Dispose call (bounded), then go-plugin's
// shutdown, then the process itself if it is still there. It runs once.
func (cn *conn) close() {
	if !cn.stopping.CompareAndSwap(false, true) {
		return
	}
	close(cn.stop)
	if cn.rpc != nil && !cn.exited() {
		ctx, cancel := context.WithTimeout(context.Background(), min(cn.timeout, 2*time.Second))
		if _, err := cn.rpc.Dispose(ctx, &pluginpb.DisposeRequest{}); err != nil {
			cn.log.Debug("dispose call failed", "error", err)
		}
		cancel()
	}
	cn.mu.Lock()
	srv := cn.hostSrv
	cn.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
	done := make(chan struct{})
	go func() {
		cn.client.Kill()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(killGrace):
		// A plugin that does not answer go-plugin's shutdown (stopped,
		// wedged) is killed; Kill then returns.
		if cn.proc != nil {
			_ = cn.proc.Kill(context.Background())
		}
		<-done
	}
	_ = cn.lifeline.Close()
	_ = os.RemoveAll(cn.sockDir)
}

// awaitExit waits up to d for the process to exit and reports whether it
// has.
func (cn *conn) awaitExit(d time.Duration) bool {
	if cn.proc == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-cn.proc.exited:
		return true
	case <-t.C:
		return false
	}
}

// exited reports whether the process has exited.
func (cn *conn) exited() bool {
	if cn.proc == nil {
		return true
	}
	select {
	case <-cn.proc.exited:
		return true
	default:
		return false
	}
}

// pid returns the process id, 0 when there is none.
func (cn *conn) pid() int {
	if cn.proc == nil {
		return 0
	}
	return cn.proc.pid
}

// callCtx bounds one call by the timeout.
func (cn *conn) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, cn.timeout)
}

// startCtx bounds one call of the start (describe, configure, list
// tools) by the start timeout.
func (cn *conn) startCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, cn.startTimeout)
}

// startErr is callErr for a call bounded by startCtx.
func (cn *conn) startErr(ctx context.Context, op string, err error) error {
	return cn.errWithin(ctx, op, err, cn.startTimeout)
}

// callErr turns the error of a call into the adapter's: ErrTimeout when
// the plugin did not answer in time, ErrExited when it is gone.
func (cn *conn) callErr(ctx context.Context, op string, err error) error {
	return cn.errWithin(ctx, op, err, cn.timeout)
}

// errWithin is callErr for a call bounded by d.
func (cn *conn) errWithin(ctx context.Context, op string, err error, d time.Duration) error {
	code := status.Code(err)
	if code == codes.DeadlineExceeded || code == codes.Canceled {
		if ctx.Err() != nil {
			return fmt.Errorf("external: %s: %w", op, context.Cause(ctx))
		}
		// gRPC may notice the caller's deadline before ctx's own timer.
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			return fmt.Errorf("external: %s: %w", op, context.DeadlineExceeded)
		}
	}
	switch {
	case code == codes.DeadlineExceeded:
		return fmt.Errorf("%w: %s: no answer within %s", ErrTimeout, op, d)
	case cn.stopping.Load() || cn.exited():
		return fmt.Errorf("%w: %s: %w", ErrExited, op, err)
	case code == codes.Unavailable && cn.awaitExit(d):
		// The connection broke because the process is going away. Its exit
		// is observed a moment later, a long one on a busy machine: wait
		// within the call's bound rather than a fixed grace, so that a
		// crash is told from a broken connection whatever the load.
		return fmt.Errorf("%w: %s: %w", ErrExited, op, err)
	}
	return fmt.Errorf("external: %s: %w", op, err)
}

// serveHost serves the Host service through the broker and returns its
// broker id.
func (cn *conn) serveHost(h pluginpb.HostServer) uint32 {
	id := cn.broker.NextId()
	go cn.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(opts...)
		pluginpb.RegisterHostServer(s, h)
		cn.mu.Lock()
		cn.hostSrv = s
		cn.mu.Unlock()
		return s
	})
	return id
}

// hostPlugin is the host's side of the go-plugin plugin set: a client.
type hostPlugin struct {
	plugin.NetRPCUnsupportedPlugin
}

type hostClient struct {
	rpc    pluginpb.PluginClient
	scorer pluginpb.ScorerClient
	broker *plugin.GRPCBroker
}

func (*hostPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("external: the host does not serve plugins")
}

func (*hostPlugin) GRPCClient(_ context.Context, b *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &hostClient{rpc: pluginpb.NewPluginClient(cc), scorer: pluginpb.NewScorerClient(cc), broker: b}, nil
}

// lineLogger logs what the plugin writes to its os.Stdout and os.Stderr
// after the handshake (go-plugin streams them), one line at a time.
type lineLogger struct {
	log    hclog.Logger
	stream string
	mu     sync.Mutex
	buf    []byte
}

func (l *lineLogger) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.log.Info("plugin output", "stream", l.stream, "line", string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	return len(b), nil
}

var _ plugin.GRPCPlugin = (*hostPlugin)(nil)
