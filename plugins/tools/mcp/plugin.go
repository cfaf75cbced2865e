package mcp

//lint:file-ignore SA1019 MCP roots are deprecated by SEP-2577 but remain what servers read during the deprecation window (issue 33 item 11).

import (
	"context"
	"fmt"
	"runtime/debug"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-run/vigil/bus"
)

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
const Name = "tools/mcp"

// Plugin connects to the MCP server its [Config] names and provides the
// server's tools as tool services (see the package documentation).
// A Go program or test may apply it with bus.Context.Plugin.
var Plugin bus.Plugin = bus.RegisterFunc(Name, "the tools of an MCP server (stdio subprocess or streamable HTTP)", apply)

func apply(c *bus.Context, cfg Config) error {
	// Named by the entry's id (see config), which tells servers apart.
	log := c.Logger()

	// Everything the connection starts ends with ctx, which ends with the
	// fiber; registered first, it is cancelled last, after the graceful
	// close, and kills a subprocess that is still there.
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.Effect(func() func() { return cancel }); err != nil {
		cancel()
		return err
	}
	stderr := &lineLogger{log: log}
	cn := newConn(c, &cfg, log)
	t := newTransport(ctx, &cfg, log, stderr, cn)
	roots, err := cfg.roots()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "vigil", Version: version()}, &mcpsdk.ClientOptions{
		ToolListChangedHandler: cn.onListChanged,
		Capabilities:           capabilities(roots),
	})
	client.AddRoots(roots...)
	cctx, ccancel := context.WithTimeout(ctx, cfg.timeout())
	cs, err := client.Connect(cctx, t, nil)
	ccancel()
	if err != nil {
		t.release()
		stderr.flush()
		return fmt.Errorf("connecting to %s: %w", cfg.server(), err)
	}
	cn.cs = cs
	if err := c.Effect(func() func() {
		return func() {
			cn.close()
			t.release()
			stderr.flush()
		}
	}); err != nil {
		_ = cs.Close()
		t.release()
		cn.takeHold()()
		return err
	}
	if err := cn.sync(ctx); err != nil {
		return fmt.Errorf("%s: %w", cfg.server(), err)
	}
	log.Debug("connected", "tools", len(cn.tools))
	cn.start(ctx)
	return nil
}

// capabilities are what the client advertises: roots only when it has
// some (a server would otherwise ask for an empty list, or take the
// capability as leave to roam), and without list changes, since a
// plugin's roots change only by a new connection.
func capabilities(roots []*mcpsdk.Root) *mcpsdk.ClientCapabilities {
	if len(roots) == 0 {
		return &mcpsdk.ClientCapabilities{}
	}
	return &mcpsdk.ClientCapabilities{RootsV2: &mcpsdk.RootCapabilities{}}
}

// version is the client version announced to servers: the host's module
// version when it has one.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
