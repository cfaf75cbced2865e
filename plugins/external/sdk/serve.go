package sdk

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
)

// stderr is the process's stderr as it was before go-plugin's Serve
// redirected os.Stderr into its stdio stream: the host reads log lines
// from this one.
var stderr = os.Stderr

var logger = hclog.New(&hclog.LoggerOptions{
	Output:     stderr,
	JSONFormat: true,
	Level:      hclog.LevelFromString(os.Getenv(pluginpb.LogLevelEnv)),
})

// Logger returns the plugin's logger: JSON lines on stderr, which the
// host re-emits through its logger for the plugin. Its level is the
// host's.
func Logger() hclog.Logger { return logger }

// disposeTimeout bounds the Dispose hook when the host is gone.
const disposeTimeout = 2 * time.Second

// Serve serves p to the host that started the process and returns when
// the host disposes it. Run it from main. A plugin that cannot be served
// (no name, tools without names) is reported on stderr and the process
// exits with status 1, as does a process not started by a Vigil host.
func Serve[C any](p *Plugin[C]) {
	srv := newServer(p)
	if err := srv.check(); err != nil {
		fmt.Fprintf(stderr, "vigil plugin %q cannot be served: %v\n", p.Name, err)
		os.Exit(1)
	}
	watchHost(func() {
		ctx, cancel := context.WithTimeout(context.Background(), disposeTimeout)
		defer cancel()
		if err := srv.dispose(ctx); err != nil {
			logger.Error("dispose", "error", err)
		}
		os.Exit(0)
	})
	plugin.Serve(serveConfig(srv))
}

// serveConfig is the go-plugin configuration that serves srv.
func serveConfig[C any](srv *server[C]) *plugin.ServeConfig {
	return &plugin.ServeConfig{
		HandshakeConfig: Handshake(),
		Plugins:         plugin.PluginSet{pluginpb.PluginName: &grpcPlugin[C]{srv: srv}},
		GRPCServer:      newGRPCServer,
		Logger:          logger,
	}
}

// newGRPCServer serves on a pool of stream workers, which spares a
// goroutine per call on the event path.
func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))))...)
}

// Handshake returns the go-plugin handshake of the protocol version this
// SDK speaks, for a plugin served by other means than [Serve] (a test's
// misbehaving plugin serves go-plugin itself).
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  pluginpb.ProtocolVersion,
		MagicCookieKey:   pluginpb.MagicCookieKey,
		MagicCookieValue: pluginpb.MagicCookieValue,
	}
}

// watchHost calls gone once the host process is gone: when the lifeline
// pipe the host holds reaches end of file or, for a host that passed
// none, when the process is re-parented.
func watchHost(gone func()) {
	if fd, err := strconv.Atoi(os.Getenv(pluginpb.LifelineEnv)); err == nil && fd > 2 {
		if f := os.NewFile(uintptr(fd), "lifeline"); f != nil {
			go func() {
				_, _ = io.Copy(io.Discard, f)
				logger.Debug("host gone: lifeline closed")
				gone()
			}()
			return
		}
	}
	parent := os.Getppid()
	go func() {
		for range time.Tick(500 * time.Millisecond) {
			if os.Getppid() != parent {
				logger.Debug("host gone: re-parented")
				gone()
				return
			}
		}
	}()
}
