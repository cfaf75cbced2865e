package external

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	pluginpb "github.com/vigil-run/vigil/plugins/proto"
	"github.com/vigil-run/vigil/session"
)

// Name is the plugin's registered name.
const Name = "external"

// Event names a plugin may subscribe to.
const (
	EventSession = "session/event"
	EventCreated = "session/created"
)

func init() {
	bus.Register(bus.Module{
		Name:        Name,
		Description: "an out-of-process plugin over hashicorp/go-plugin: its events, vetoes and tools",
		Config:      func() any { return &Config{} },
		New:         New,
	})
}

// New returns the external plugin. Apply it with a [*Config].
func New() bus.Plugin { return &Plugin{} }

// Plugin is the host adapter of one out-of-process plugin. Applying it
// starts the process; the fiber owns it, and disposing the fiber stops
// it.
type Plugin struct{}

// Name implements bus.Plugin.
func (*Plugin) Name() string { return Name }

// Inject implements bus.Injector: the Host service reads sessions
// through the session manager, when there is one.
func (*Plugin) Inject() bus.Inject {
	return bus.Inject{Optional: []string{session.Sessions.Name()}}
}

// Apply implements bus.Plugin: it starts the process, checks the
// handshake, configures the plugin, provides its tools and subscribes it
// to the events it asked for. A process that exits afterwards disposes
// the fiber.
func (*Plugin) Apply(c *bus.Context, config any) error {
	cfg, err := bus.ConfigAs[Config](config)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	raw, _ := cfg.configJSON()
	cn, err := start(&cfg, c.Logger())
	if err != nil {
		return err
	}
	log := cn.log
	// Registered first, so it runs last: listeners and tools go before
	// the process does.
	if err := c.Effect(func() func() { return cn.close }); err != nil {
		cn.close()
		return err
	}
	log.Debug("plugin started", "path", cn.path, "pid", cn.pid())

	ctx := context.Background()
	dctx, cancel := cn.callCtx(ctx)
	desc, err := cn.rpc.Describe(dctx, &pluginpb.DescribeRequest{})
	cancel()
	if err != nil {
		return cn.callErr(ctx, "describe", err)
	}
	name := desc.GetName()
	if name == "" {
		name = filepath.Base(cn.path)
	}

	hostID := cn.serveHost(&hostService{c: c, name: name, log: log})
	cctx, cancel := cn.callCtx(ctx)
	_, err = cn.rpc.Configure(cctx, &pluginpb.ConfigureRequest{Config: raw, HostBrokerId: hostID})
	cancel()
	if err != nil {
		return cn.callErr(ctx, "configure", err)
	}

	lctx, cancel := cn.callCtx(ctx)
	tools, err := cn.rpc.ListTools(lctx, &pluginpb.ListToolsRequest{})
	cancel()
	if err != nil {
		return cn.callErr(ctx, "list tools", err)
	}
	for _, pt := range tools.GetTools() {
		t, err := newTool(cn, pt)
		if err != nil {
			return fmt.Errorf("external: tool %q of %s: %w", pt.GetName(), name, err)
		}
		if _, err := agentloop.ProvideTool(c, t); err != nil {
			return fmt.Errorf("external: tool %q of %s: %w", pt.GetName(), name, err)
		}
	}

	l := &listeners{cn: cn, name: name}
	for _, sub := range desc.GetSubscriptions() {
		if err := l.subscribe(c, sub); err != nil {
			return err
		}
	}

	f := c.Fiber()
	go watch(cn, func() {
		log.Error("plugin process exited; its fiber fails", "path", cn.path, "pid", cn.pid(), "exit", exitString(cn.proc.exitErr()), "stderr", cn.proc.tail.lastLine())
		f.Fail(fmt.Errorf("%w: %s (%s)", ErrExited, cn.path, exitString(cn.proc.exitErr())))
	})
	log.Info("plugin ready", "name", name, "version", desc.GetVersion(), "tools", len(tools.GetTools()), "subscriptions", len(desc.GetSubscriptions()))
	return nil
}

// watch calls crashed when the process exits before the plugin is
// disposed.
func watch(cn *conn, crashed func()) {
	select {
	case <-cn.proc.exited:
		if !cn.stopping.Load() {
			crashed()
		}
	case <-cn.stop:
	}
}

func exitString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// listeners maps a plugin's subscriptions to bus listeners.
type listeners struct {
	cn   *conn
	name string
}

func (l *listeners) subscribe(c *bus.Context, sub *pluginpb.Subscription) error {
	types := slices.Clone(sub.GetTypes())
	wants := func(typ string) bool { return len(types) == 0 || slices.Contains(types, typ) }
	switch sub.GetEvent() {
	case EventSession:
		if sub.GetVeto() {
			bus.Veto.On(c, func(ctx context.Context, d bus.Dispatch) error {
				if d.Name != session.Committed.Name() {
					return nil
				}
				cm, ok := d.Payload.(*session.Commit)
				if !ok || cm == nil || cm.Record == nil || cm.Session == nil || !wants(cm.Record.Type()) {
					return nil
				}
				return l.validate(ctx, cm)
			})
		}
		if sub.GetObserve() {
			session.Committed.On(c, func(ctx context.Context, cm *session.Commit) error {
				if !wants(cm.Record.Type()) {
					return nil
				}
				return l.observe(ctx, commitEvent(cm))
			})
		}
	case EventCreated:
		if sub.GetObserve() {
			session.Created.On(c, func(ctx context.Context, s *session.Session) error {
				// An observer: a failing plugin does not fail the session.
				if err := l.observe(ctx, &pluginpb.Event{Name: EventCreated, Session: s.ID()}); err != nil {
					l.cn.log.Error("session/created observer failed", "session", s.ID(), "error", err)
				}
				return nil
			})
		}
	default:
		return fmt.Errorf("external: %s subscribes to %q; a plugin can subscribe to %s and %s", l.name, sub.GetEvent(), EventSession, EventCreated)
	}
	return nil
}

func commitEvent(cm *session.Commit) *pluginpb.Event {
	return &pluginpb.Event{
		Name:    EventSession,
		Session: cm.Session.ID(),
		Seq:     cm.Record.Seq(),
		Type:    cm.Record.Type(),
		Record:  cm.Record.Bytes(),
	}
}

// validate asks the plugin about a record before it is committed. A
// plugin that fails to answer refuses it: a policy that cannot be
// consulted does not let events through.
func (l *listeners) validate(ctx context.Context, cm *session.Commit) error {
	cctx, cancel := l.cn.callCtx(ctx)
	defer cancel()
	resp, err := l.cn.rpc.Validate(cctx, commitEvent(cm))
	if err != nil {
		return l.cn.callErr(ctx, "validate "+cm.Record.Type(), err)
	}
	if resp.GetVeto() {
		return &VetoError{Plugin: l.name, Code: resp.GetCode(), Reason: resp.GetReason()}
	}
	return nil
}

// observe delivers an event after it happened; the bus logs its error.
func (l *listeners) observe(ctx context.Context, ev *pluginpb.Event) error {
	cctx, cancel := l.cn.callCtx(ctx)
	defer cancel()
	if _, err := l.cn.rpc.OnEvent(cctx, ev); err != nil {
		return l.cn.callErr(ctx, "on event "+ev.GetType(), err)
	}
	return nil
}

var (
	_ bus.Plugin   = (*Plugin)(nil)
	_ bus.Injector = (*Plugin)(nil)
)
