package external

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/session/live"
)

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
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
type Plugin struct {
	// gates holds the veto gate of each fiber whose plugin validates: it
	// outlives the fiber's reloads and failures, and goes with the fiber.
	gates gates
}

// Name implements bus.Plugin.
func (*Plugin) Name() string { return Name }

// Inject implements bus.Injector: the Host service reads sessions
// through the session manager, when there is one.
func (*Plugin) Inject() bus.Inject {
	return bus.Inject{Optional: []bus.ServiceKey{live.Sessions}}
}

// ValidateConfig implements bus.ConfigValidator: the bus checks the
// config before Apply, whoever applies the plugin.
func (*Plugin) ValidateConfig(config any) error { return bus.ValidateAs[Config](config) }

// Apply implements bus.Plugin: it starts the process, checks the
// handshake, configures the plugin, provides its tools and subscribes it
// to the events it asked for. A process that exits afterwards fails the
// fiber. The events it validates go through the entry's gate (see gate),
// which refuses them (unless the entry fails open) whenever no process is
// ready: while the entry is applied again, after a crash, after a failed
// re-apply.
func (p *Plugin) Apply(c *bus.Context, config any) (err error) {
	cfg, err := bus.ConfigAs[Config](config)
	if err != nil {
		return err
	}
	if g := p.gates.lookup(c.Fiber()); g != nil {
		// Until this apply is ready, the gate refuses with its error too.
		defer func() {
			if err != nil {
				g.failed(err)
			}
		}()
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
	dctx, cancel := cn.startCtx(ctx)
	desc, err := cn.rpc.Describe(dctx, &pluginpb.DescribeRequest{})
	cancel()
	if err != nil {
		return cn.startErr(ctx, "describe", err)
	}
	name := desc.GetName()
	if name == "" {
		name = filepath.Base(cn.path)
	}

	hostID := cn.serveHost(&hostService{c: c, name: name, log: log})
	cctx, cancel := cn.startCtx(ctx)
	_, err = cn.rpc.Configure(cctx, &pluginpb.ConfigureRequest{Config: raw, HostBrokerId: hostID})
	cancel()
	if err != nil {
		return cn.startErr(ctx, "configure", err)
	}

	lctx, cancel := cn.startCtx(ctx)
	tools, err := cn.rpc.ListTools(lctx, &pluginpb.ListToolsRequest{})
	cancel()
	if err != nil {
		return cn.startErr(ctx, "list tools", err)
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

	entry := cfg.entryID
	if entry == "" {
		entry = name
	}
	l := &listeners{cn: cn, name: name, entry: entry, open: cfg.failOpen()}
	var vetoes typeSet
	for _, sub := range desc.GetSubscriptions() {
		if err := l.subscribe(c, sub); err != nil {
			return err
		}
		if sub.GetEvent() == EventSession && sub.GetVeto() {
			vetoes.add(sub.GetTypes())
		}
	}

	if err := p.validate(c, l, vetoes, &UnavailableError{Entry: entry, Plugin: name}); err != nil {
		return err
	}
	f := c.Fiber()
	go watch(cn, func() {
		exit := exitString(cn.proc.exitErr())
		log.Error("plugin process exited; its fiber fails", "entry", entry, "path", cn.path, "pid", cn.pid(), "exit", exit, "stderr", cn.proc.tail.lastLine())
		// Before the fiber fails, so that the gate says why.
		if g := p.gates.lookup(f); g != nil {
			g.down(l, &UnavailableError{Entry: entry, Plugin: name, Exit: exit})
		}
		f.Fail(fmt.Errorf("%w: entry %q: %s (%s)", ErrExited, entry, cn.path, exit))
	})
	log.Info("plugin ready", "name", name, "version", desc.GetVersion(), "tools", len(tools.GetTools()), "subscriptions", len(desc.GetSubscriptions()))
	return nil
}

// validate puts l, which validates the events of types, in force at the
// entry's gate (installing the gate the first time the entry validates),
// and registers its removal: the first thing undone when the fiber is
// reloaded, failed or disposed, so that the gate refuses, for reloading,
// from before the process stops until the next one is ready.
func (p *Plugin) validate(c *bus.Context, l *listeners, types typeSet, reloading *UnavailableError) error {
	g := p.gates.lookup(c.Fiber())
	if g == nil {
		if !types.any {
			return nil
		}
		var err error
		if g, err = p.gates.of(c, reloading); err != nil {
			return err
		}
	}
	undo := func() {
		select {
		case <-c.Done():
			// The entry is removed, and its policy with it.
			g.remove()
		default:
			g.down(l, reloading)
		}
	}
	if err := c.Effect(func() func() { return undo }); err != nil {
		return err
	}
	g.up(l, types)
	return nil
}

// typeSet is the event types a plugin validates.
type typeSet struct {
	any   bool // it validates some
	all   bool // a subscription without types: every type
	types []string
}

func (s *typeSet) add(types []string) {
	s.any = true
	if len(types) == 0 {
		s.all = true
	}
	s.types = append(s.types, types...)
}

func (s *typeSet) has(typ string) bool { return s.all || slices.Contains(s.types, typ) }

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
	cn    *conn
	name  string
	entry string // its plugins.yaml id
	open  bool   // fail open: a validation that gets no answer lets the event through
	// answers are the plugin's answers to the tool calls proposed to it.
	answers answers
}

func (l *listeners) subscribe(c *bus.Context, sub *pluginpb.Subscription) error {
	types := slices.Clone(sub.GetTypes())
	wants := func(typ string) bool { return len(types) == 0 || slices.Contains(types, typ) }
	switch sub.GetEvent() {
	case EventSession:
		// Veto subscriptions are registered together, by vetoes.
		if sub.GetObserve() {
			live.Committed.On(c, func(ctx context.Context, cm live.Commit) error {
				if !wants(cm.Record().Type()) {
					return nil
				}
				return l.observe(ctx, commitEvent(cm))
			})
		}
	case EventCreated:
		if sub.GetObserve() {
			live.Created.On(c, func(ctx context.Context, s *live.Session) error {
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

func commitEvent(cm live.Commit) *pluginpb.Event {
	return &pluginpb.Event{
		Name:    EventSession,
		Session: cm.Session().ID(),
		Seq:     cm.Record().Seq(),
		Type:    cm.Record().Type(),
		Record:  cm.Record().Bytes(),
	}
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
	_ bus.Plugin          = (*Plugin)(nil)
	_ bus.Injector        = (*Plugin)(nil)
	_ bus.ConfigValidator = (*Plugin)(nil)
)
