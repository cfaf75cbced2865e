package external

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/session"
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
	mu sync.Mutex
	// guards holds, per fiber whose validating process crashed, the fiber
	// of its fail-closed guard: it outlives the failed fiber until that is
	// applied again or disposed.
	guards map[*bus.Fiber]*bus.Fiber
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
// fiber; when it validated events (and fails closed), a guard keeps
// refusing them until the entry is applied again.
func (p *Plugin) Apply(c *bus.Context, config any) error {
	cfg, err := bus.ConfigAs[Config](config)
	if err != nil {
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

	l := &listeners{cn: cn, name: name, open: cfg.failOpen()}
	var vetoes typeSet
	for _, sub := range desc.GetSubscriptions() {
		if err := l.subscribe(c, sub); err != nil {
			return err
		}
		if sub.GetEvent() == EventSession && sub.GetVeto() {
			vetoes.add(sub.GetTypes())
		}
	}
	if vetoes.any {
		l.vetoes(c, vetoes)
	}

	f := c.Fiber()
	// The plugin can be consulted again: its own validator replaces the
	// guard of an earlier crash (registered above, so there is no gap).
	p.lift(f)
	entry := cfg.entryID
	if entry == "" {
		entry = name
	}
	root := c.Root()
	go watch(cn, func() {
		exit := exitString(cn.proc.exitErr())
		log.Error("plugin process exited; its fiber fails", "entry", entry, "path", cn.path, "pid", cn.pid(), "exit", exit, "stderr", cn.proc.tail.lastLine())
		if vetoes.any && !l.open {
			// Before the fiber fails, so that its validator and the guard
			// never both miss an event.
			p.guard(root, f, vetoes, &UnavailableError{Entry: entry, Plugin: name, Exit: exit}, log)
		}
		f.Fail(fmt.Errorf("%w: entry %q: %s (%s)", ErrExited, entry, cn.path, exit))
	})
	log.Info("plugin ready", "name", name, "version", desc.GetVersion(), "tools", len(tools.GetTools()), "subscriptions", len(desc.GetSubscriptions()))
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

// guard installs the fail-closed guard of f, whose validating process
// exited: a veto listener that refuses the types the plugin validated,
// except the closers that end a turn cleanly, until f is applied again
// (Apply lifts it) or disposed. It lives in a fiber of its own under the
// root, because failing f disposes everything f registered.
func (p *Plugin) guard(root *bus.Root, f *bus.Fiber, types typeSet, down *UnavailableError, log hclog.Logger) {
	g, err := root.Context().Plugin(bus.PluginFunc(Name, func(gc *bus.Context, _ struct{}) error {
		bus.Veto.On(gc, func(_ context.Context, d bus.Dispatch) error {
			if d.Name != live.Committed.Name() {
				return nil
			}
			cm, ok := d.Payload.(live.Commit)
			if !ok || cm.IsZero() {
				return nil
			}
			if f.State() == bus.StateDisposed {
				// The entry is gone for good; so is its policy.
				p.lift(f)
				return nil
			}
			typ := cm.Record().Type()
			if !types.has(typ) || isCloser(cm.Record()) {
				return nil
			}
			e := *down
			e.Type = typ
			return &e
		})
		return nil
	}), nil)
	if err != nil {
		// Only a root being disposed refuses it: the host is going away.
		log.Error("fail-closed guard not installed", "entry", down.Entry, "error", err)
		return
	}
	p.mu.Lock()
	if p.guards == nil {
		p.guards = map[*bus.Fiber]*bus.Fiber{}
	}
	old := p.guards[f]
	p.guards[f] = g
	p.mu.Unlock()
	if old != nil {
		_ = old.Dispose()
	}
	log.Warn("refusing the events the plugin validated until its entry is applied again", "entry", down.Entry, "exit", down.Exit)
}

// lift removes f's fail-closed guard, if it has one.
func (p *Plugin) lift(f *bus.Fiber) {
	p.mu.Lock()
	g := p.guards[f]
	delete(p.guards, f)
	p.mu.Unlock()
	if g != nil {
		_ = g.Dispose()
	}
}

// closerCodes are the error codes of the synthetic tool results that end
// a turn cleanly: the loop's and crash repair's (session.Closers) and a
// cancelled turn's abandoned tools (agentloop.CodeToolAbandoned).
var closerCodes = []string{session.CodeToolNotStarted, session.CodeToolOutcomeUnknown, agentloop.CodeToolAbandoned}

// isCloser reports whether rec only closes what is open (a synthetic tool
// result, a step or turn end): a guard lets it through so that a session
// is never left with a turn it cannot end.
func isCloser(rec session.Record) bool {
	switch rec.Type() {
	case session.TypeStepEnd, session.TypeTurnEnd:
		return true
	case session.TypeToolResult:
		r, err := session.DecodeData[session.ToolResult](rec)
		return err == nil && r.Content == "" && r.Error != nil && slices.Contains(closerCodes, r.Error.Code)
	}
	return false
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
	open bool // fail open: a validation that gets no answer lets the event through
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

// vetoes registers the plugin's validation of the records of types: one
// veto listener for all its veto subscriptions, so that each record is
// sent once, and, when it validates tool calls, one of the tool/approve
// dispatch, where it may answer ask (see propose).
func (l *listeners) vetoes(c *bus.Context, types typeSet) {
	calls := types.has(session.TypeToolCall)
	bus.Veto.On(c, func(ctx context.Context, d bus.Dispatch) error {
		switch d.Name {
		case live.Committed.Name():
			cm, ok := d.Payload.(live.Commit)
			if !ok || cm.IsZero() || !types.has(cm.Record().Type()) {
				return nil
			}
			return l.validate(ctx, cm)
		case agentloop.ToolApprove.Name():
			q, ok := d.Payload.(*agentloop.ApprovalQuery)
			if !calls || !ok || q == nil || q.Session == nil {
				return nil
			}
			return l.propose(ctx, q)
		}
		return nil
	})
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
