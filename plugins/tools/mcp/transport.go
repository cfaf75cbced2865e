package mcp

import (
	"context"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// terminateGrace is how long closing a subprocess waits after closing
	// its stdin before SIGTERM, and after SIGTERM before SIGKILL.
	terminateGrace = 2 * time.Second
	// waitDelay bounds how long waiting for a killed subprocess waits for
	// its output pipes (a grandchild may hold them open).
	waitDelay = time.Second
)

// transport is how the plugin reaches its server, and what it must
// release when it is done with it.
type transport struct {
	mcpsdk.Transport
	// release frees what the transport holds beyond the MCP session
	// (idle HTTP connections); it runs after the session closed.
	release func()
}

// noticing is a transport whose connection calls note as soon as it reads
// a notifications/tools/list_changed, on the reader, before it reads the
// next message: a change announced before a tool result is noted before
// the call returns. (The client's handler for it runs later, on another
// goroutine.) Only for stdio: the streamable HTTP connection relies on
// methods of its own that a wrapper would hide.
type noticing struct {
	mcpsdk.Transport
	note func()
}

func (t noticing) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return noticingConn{c, t.note}, nil
}

type noticingConn struct {
	mcpsdk.Connection
	note func()
}

func (c noticingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Request); ok && err == nil && !r.IsCall() && r.Method == methodToolListChanged {
		c.note()
	}
	return msg, err
}

// methodToolListChanged is the notification of a changed tool list.
const methodToolListChanged = "notifications/tools/list_changed"

// newTransport returns the transport cfg describes. A subprocess is
// started by Connect, bound to ctx: cancelling ctx kills it and its
// process group.
func newTransport(ctx context.Context, cfg *Config, log hclog.Logger, stderr *lineLogger, cn *conn) transport {
	if cfg.URL != "" {
		rt := http.DefaultTransport.(*http.Transport).Clone()
		hc := &http.Client{Transport: rt}
		if len(cfg.Headers) > 0 {
			h := http.Header{}
			for k, v := range cfg.Headers {
				h.Set(k, v)
			}
			hc.Transport = &headerTransport{base: rt, header: h}
		}
		return transport{
			Transport: &mcpsdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc},
			release:   rt.CloseIdleConnections,
		}
	}
	cmd := exec.CommandContext(ctx, cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = environ(cfg.Env)
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	ownProcess(cmd)
	log.Debug("starting server", "command", cfg.Command, "args", cfg.Args)
	cn.seesNotes = true
	return transport{
		Transport: noticing{&mcpsdk.CommandTransport{Command: cmd, TerminateDuration: terminateGrace}, cn.noteChange},
		// Closing the session ended the server; what it started in its
		// process group goes with it.
		release: func() {
			if cmd.Process != nil {
				killGroup(cmd)
			}
		},
	}
}

// environ is the host's environment with extra set over it, in a stable
// order.
func environ(extra map[string]string) []string {
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.header {
		r.Header[k] = vs
	}
	return t.base.RoundTrip(r)
}
