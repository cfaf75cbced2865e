package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
)

// ErrServerExited is the cause a plugin's fiber fails with when its
// connection to the server ended without the plugin closing it.
var ErrServerExited = errors.New("tools/mcp: server connection ended")

// conn is one connection to one server, owned by one fiber: the MCP
// session, the tools it provides, and the goroutines that follow the
// server's list changes and notice its end.
type conn struct {
	c   *bus.Context
	cfg *Config
	log hclog.Logger
	cs  *mcpsdk.ClientSession

	changed chan struct{} // a list change to handle; buffered, one is enough
	// seesNotes: the transport notes list changes as it reads them (see
	// noticing), so the client's handler need not.
	seesNotes bool
	stop      chan struct{} // closed when the plugin closes the connection
	wg        sync.WaitGroup

	// mu guards tools and the closing/dying handshake: a connection is
	// either closed by the plugin or lost, never both.
	mu      sync.Mutex
	tools   map[string]*offered // by the name the model sees
	closing bool
	dying   bool
	// hold keeps the agents' next request waiting for a list change that
	// was announced and not yet applied (agentloop.ToolsChanging).
	hold func()
}

// offered is a provided tool with its withdrawal.
type offered struct {
	tool     *tool
	withdraw func()
}

func newConn(c *bus.Context, cfg *Config, log hclog.Logger) *conn {
	return &conn{
		c:       c,
		cfg:     cfg,
		log:     log,
		changed: make(chan struct{}, 1),
		stop:    make(chan struct{}),
		tools:   map[string]*offered{},
	}
}

// onListChanged is the client's notifications/tools/list_changed
// handler. The client runs it after the connection read the
// notification, possibly after later messages were delivered, so a
// transport that can note changes as it reads them does so instead.
func (cn *conn) onListChanged(context.Context, *mcpsdk.ToolListChangedRequest) {
	if !cn.seesNotes {
		cn.noteChange()
	}
}

// noteChange takes note of a list change: it holds the agents' next
// request until the re-list is applied, and wakes the refresher. It only
// takes note, since it may run on the connection's reader.
func (cn *conn) noteChange() {
	cn.mu.Lock()
	if cn.closing || cn.dying {
		cn.mu.Unlock()
		return
	}
	if cn.hold == nil {
		cn.hold = agentloop.ToolsChanging(cn.c, cn.cfg.timeout())
	}
	cn.mu.Unlock()
	select {
	case cn.changed <- struct{}{}:
	default:
	}
}

// takeHold returns the hold of the changes noted so far, and forgets it.
func (cn *conn) takeHold() func() {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	h := cn.hold
	cn.hold = nil
	if h == nil {
		h = func() {}
	}
	return h
}

// sync lists the server's tools and makes the provided set match it:
// tools gone or changed are withdrawn, new ones provided. A listing that
// fails changes nothing; a tool that cannot be provided (its name is
// taken) does not keep the others out. Errors are joined.
func (cn *conn) sync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, cn.cfg.timeout())
	defer cancel()
	want := map[string]*tool{}
	var errs []error
	for t, err := range cn.cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if !cn.cfg.selects(t.Name) {
			continue
		}
		if err := agentloop.CheckToolName(cn.cfg.Prefix + t.Name); err != nil {
			// A name from the server reaches no model unchecked; one the
			// model APIs would refuse is left out, the others offered.
			cn.log.Warn("skipping a tool of the server: the model could not call it", "error", err)
			continue
		}
		tl, err := newTool(cn, cn.cfg.Prefix, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := want[tl.spec.Name]; dup {
			errs = append(errs, fmt.Errorf("the server lists tool %q twice", t.Name))
			continue
		}
		want[tl.spec.Name] = tl
	}

	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.closing || cn.dying {
		return nil
	}
	var gone, added []string
	for name, o := range cn.tools {
		if w, ok := want[name]; !ok || !w.sameAs(o.tool) {
			o.withdraw()
			delete(cn.tools, name)
			gone = append(gone, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, ok := cn.tools[name]; ok {
			continue
		}
		withdraw, err := agentloop.ProvideTool(cn.c, want[name])
		if err != nil {
			if errors.Is(err, bus.ErrServiceDuplicate) {
				err = fmt.Errorf("tool %q: %w (give this server a prefix)", name, err)
			}
			errs = append(errs, err)
			continue
		}
		cn.tools[name] = &offered{tool: want[name], withdraw: withdraw}
		added = append(added, name)
	}
	if len(gone)+len(added) > 0 {
		slices.Sort(gone)
		cn.log.Debug("tools updated", "provided", added, "withdrawn", gone)
	}
	return errors.Join(errs...)
}

// start runs the goroutines that follow list changes and the end of the
// connection. ctx ends with the fiber.
func (cn *conn) start(ctx context.Context) {
	cn.wg.Go(func() {
		for {
			select {
			case <-cn.stop:
				return
			case <-cn.changed:
				// Changes noted from here on are listed again after this.
				done := cn.takeHold()
				if err := cn.sync(ctx); err != nil {
					cn.log.Error("updating tools after a list change", "error", err)
				}
				done()
			}
		}
	})
	// The watcher is not in wg: when the connection is lost it fails the
	// fiber, whose disposers (close among them) then run on its
	// goroutine, and close must not wait for it.
	go cn.watch()
}

// watch waits for the connection to end. An end the plugin did not ask
// for fails the fiber.
func (cn *conn) watch() {
	werr := cn.cs.Wait()
	cn.mu.Lock()
	if cn.closing {
		cn.mu.Unlock()
		return
	}
	cn.dying = true
	for name, o := range cn.tools {
		o.withdraw()
		delete(cn.tools, name)
	}
	cn.mu.Unlock()
	cn.takeHold()()
	// Closing reaps a subprocess; when the end itself carries no reason,
	// its exit status is the best one.
	detail := werr
	if cerr := cn.cs.Close(); detail == nil {
		detail = cerr
	}
	cause := fmt.Errorf("%w: %s", ErrServerExited, cn.cfg.server())
	if detail != nil {
		cause = fmt.Errorf("%w: %w", cause, detail)
	}
	// Failing the fiber logs the cause, once, as every plugin failure is.
	cn.log.Debug("server connection lost; tools withdrawn")
	// Not on a goroutine the fiber's disposers wait for: Fail runs them.
	cn.c.Fiber().Fail(cause)
}

// close ends the connection on the plugin's behalf: it stops following
// list changes, closes the MCP session (a subprocess is asked to exit,
// then terminated) and waits for the goroutines it may wait for.
func (cn *conn) close() {
	cn.mu.Lock()
	already := cn.closing
	cn.closing = true
	cn.mu.Unlock()
	if already {
		return
	}
	close(cn.stop)
	cn.wg.Wait()
	cn.takeHold()()
	if err := cn.cs.Close(); err != nil {
		cn.log.Debug("closing the server connection", "error", err)
	}
}
