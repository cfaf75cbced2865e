package vigil

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/session/live"
)

// A Source is where [Open] takes a composition from: [File], [Compose],
// or any function returning a loaded file (config.LoadOnly, to apply a
// part of one).
type Source func() (*config.File, error)

// File is the composition in the plugins.yaml at path, decoded strictly
// with ${VAR} expanded from the environment (see package config).
func File(path string) Source {
	return func() (*config.File, error) { return config.Load(path) }
}

// composedName names a composition of Go values in errors.
const composedName = "vigil.Compose"

// Compose is a composition of Go values, applied in order as the entries
// of a plugins.yaml would be. Every name must be registered (its package
// linked).
func Compose(entries ...config.Entry) Source {
	return func() (*config.File, error) {
		es, err := checkEntries(entries, map[string]bool{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", composedName, err)
		}
		if err := config.CheckPeers(es); err != nil {
			if ce, ok := errors.AsType[*config.Error](err); ok {
				ce.File = composedName
			}
			return nil, err
		}
		return &config.File{Path: composedName, Entries: es}, nil
	}
}

// checkEntries refuses what the loader refuses in a file, an unknown
// plugin name and two entries with one id, and returns a copy of entries
// with every id set (the caller's slice is left as it is).
func checkEntries(entries []config.Entry, ids map[string]bool) ([]config.Entry, error) {
	out := make([]config.Entry, len(entries))
	for i := range entries {
		out[i] = entries[i]
		e := &out[i]
		if e.ID == "" {
			e.ID = e.Name
		}
		if ids[e.ID] {
			return nil, fmt.Errorf("%w %q; give one entry an id", config.ErrDuplicateID, e.ID)
		}
		ids[e.ID] = true
		if e.Name == config.GroupName {
			children, ok := e.Config.([]config.Entry)
			if !ok && e.Config != nil {
				return nil, fmt.Errorf("%s: a group's config is a []config.Entry, got %T", e.ID, e.Config)
			}
			var err error
			if e.Config, err = checkEntries(children, ids); err != nil {
				return nil, err
			}
			continue
		}
		if _, ok := bus.LookupModule(e.Name); !ok {
			return nil, fmt.Errorf("%w %q (is its package imported?)", config.ErrUnknownPlugin, e.Name)
		}
		// A config that names its entry (an agent others delegate to)
		// learns its id, as the loader tells it; one given by value is
		// copied so that it can.
		if e.Config != nil {
			if rv := reflect.ValueOf(e.Config); rv.Kind() != reflect.Pointer {
				if p := reflect.New(rv.Type()); p.Type().Implements(entryIDSetter) {
					p.Elem().Set(rv)
					e.Config = p.Interface()
				}
			}
		}
		if v, ok := e.Config.(interface{ SetEntryID(string) }); ok {
			v.SetEntryID(e.ID)
		}
	}
	return out, nil
}

var entryIDSetter = reflect.TypeFor[interface{ SetEntryID(string) }]()

// Plugin is one entry of a [Compose]: the registered plugin name and its
// config (the plugin's config struct, or a pointer to it; nil for the
// zero config). Its id, for reloads and errors, is the name; set the
// entry's ID to use one plugin twice.
func Plugin(name string, cfg any) config.Entry {
	return config.Entry{ID: name, Name: name, Config: cfg}
}

// An Option configures [Open].
type Option func(*options)

type options struct {
	logger hclog.Logger
	apply  []config.ApplyOption
	hot    *live.HotLimits
}

// WithHotSessions bounds the sessions the runtime keeps open between the
// turns it runs on them (Turn, Decide, a worker's jobs): at most l.Sessions,
// their logs l.Bytes long in all; past either the least recently used
// are closed. The zero HotLimits keeps none open. The default is
// [live.DefaultHotLimits].
func WithHotSessions(l live.HotLimits) Option { return func(o *options) { o.hot = &l } }

// WithLogger makes the runtime log to l (the default logs nothing).
func WithLogger(l hclog.Logger) Option { return func(o *options) { o.logger = l } }

// WithApplyOptions passes opts to config.Apply when the composition is
// applied (config.OnEntry, to show which plugin is starting).
func WithApplyOptions(opts ...config.ApplyOption) Option {
	return func(o *options) { o.apply = append(o.apply, opts...) }
}

// Runtime is an open composition: a bus with the plugins applied.
type Runtime struct {
	root *bus.Root
	comp *config.Composition
	name string
	log  hclog.Logger

	mu      sync.Mutex
	running map[string]chan struct{} // closed when the session's turn here ends
	hot     *live.HotLimits          // WithHotSessions, applied to each manager met
	hotFor  *live.Manager            // the manager hot was applied to last
}

// Open loads the composition and applies it. A source that fails to load,
// a plugin that fails to apply and a plugin left waiting for a service
// no plugin provides ([ErrWaiting]) are errors; nothing stays applied
// then.
func Open(ctx context.Context, src Source, opts ...Option) (*Runtime, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	f, err := src()
	if err != nil {
		return nil, err
	}
	var bopts []bus.Option
	if o.logger != nil {
		bopts = append(bopts, bus.WithLogger(o.logger))
	}
	root := bus.New(bopts...)
	comp, err := config.Apply(root.Context(), f, o.apply...)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", f.Path, err), root.Dispose())
	}
	if waiting := root.Pending(); len(waiting) > 0 {
		return nil, errors.Join(&WaitingError{Source: f.Path, Waiting: waiting}, root.Dispose())
	}
	log := o.logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Runtime{root: root, comp: comp, name: f.Path, log: log, running: map[string]chan struct{}{}, hot: o.hot}, nil
}

// Close disposes every plugin, last applied first: sessions are flushed
// and closed, stores closed. Calling it again does nothing.
func (r *Runtime) Close() error { return r.root.Dispose() }

// Context is the bus context of the runtime's root, for what this
// package does not wrap: services (bus.Service.Get) and events.
func (r *Runtime) Context() *bus.Context { return r.root.Context() }

// Composition is the applied composition, for reloads (config.Watch,
// Composition.Reload).
func (r *Runtime) Composition() *config.Composition { return r.comp }

// Manager is the session manager of the composition's store, an error
// matching [ErrNoService] when no plugin provides one.
func (r *Runtime) Manager() (*live.Manager, error) {
	mgr, err := service(r, live.Sessions)
	if err != nil || r.hot == nil {
		return mgr, err
	}
	// A reload may bring a new manager: it gets the limits too.
	r.mu.Lock()
	if r.hotFor != mgr {
		mgr.SetHotLimits(*r.hot)
		r.hotFor = mgr
	}
	r.mu.Unlock()
	return mgr, nil
}

// Agent is the composition's agent, an error matching [ErrNoService] when
// no plugin provides one. A reload may replace it: ask again per turn.
func (r *Runtime) Agent() (*agentloop.Agent, error) { return service(r, agentloop.AgentService) }

// ErrNoAgent is matched by the error of [Runtime.AgentNamed] for an id
// that names no agent of the composition, and for "" when the
// composition has several entry points and none is named.
var ErrNoAgent = errors.New("vigil: no such agent")

// AgentNamed is the agent of the composition's entry with that id; ""
// is [Runtime.Agent], the entry point (the only agent no other is offered
// to as a tool). The error names the agents there are.
func (r *Runtime) AgentNamed(id string) (*agentloop.Agent, error) {
	named, err := agentloop.AgentServices.Lookup(r.root.Context())
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, n := range named {
		name := strings.TrimPrefix(n.Name, "agents/")
		if name == id {
			return n.Value, nil
		}
		ids = append(ids, name)
	}
	if id == "" {
		a, err := r.Agent()
		if err == nil || len(ids) < 2 {
			return a, err
		}
		return nil, fmt.Errorf("%w: the composition has several agents (%s); name one", ErrNoAgent, strings.Join(ids, ", "))
	}
	return nil, fmt.Errorf("%w %q (agents: %s)", ErrNoAgent, id, strings.Join(ids, ", "))
}

func service[T any](r *Runtime, s bus.Service[T]) (T, error) {
	v, err := s.Get(r.root.Context())
	if err != nil {
		var zero T
		if errors.Is(err, bus.ErrServiceMissing) {
			return zero, &missingError{source: r.name, service: s.Name(), err: err}
		}
		return zero, err
	}
	return v, nil
}
