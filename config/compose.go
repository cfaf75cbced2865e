package config

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/vigil-run/vigil/bus"
)

func init() {
	bus.Register(bus.Module{
		Name:        GroupName,
		Description: "applies a list of plugin entries as one fiber, reloaded by id",
		New:         func() bus.Plugin { return &group{} },
	})
}

// group applies its entries as child fibers and reconciles them by id when
// its config changes.
type group struct {
	onEntry  func(Entry) func(error) // see OnEntry; nil: none
	mu       sync.Mutex
	children map[string]*child
	order    []string
	errs     []error
}

type child struct {
	entry Entry
	fiber *bus.Fiber
}

func (g *group) Name() string { return GroupName }

func (g *group) Apply(ctx *bus.Context, config any) error {
	entries, err := entriesOf(config)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.children = map[string]*child{}
	g.order = nil
	g.errs = nil
	g.mu.Unlock()
	self := ctx.Fiber()
	groups.Store(self, g)
	if err := ctx.Effect(func() func() { return func() { groups.Delete(self) } }); err != nil {
		return err
	}
	for _, e := range entries {
		g.add(ctx, e)
	}
	return nil
}

func entriesOf(config any) ([]Entry, error) {
	switch c := config.(type) {
	case nil:
		return nil, nil
	case []Entry:
		return c, nil
	case *[]Entry:
		return *c, nil
	}
	return nil, fmt.Errorf("%w: group takes a list of entries, got %T", bus.ErrConfigType, config)
}

// add applies one entry (unless disabled) and records it.
func (g *group) add(ctx *bus.Context, e Entry) {
	c := &child{entry: e}
	g.mu.Lock()
	g.children[e.ID] = c
	g.order = append(g.order, e.ID)
	g.mu.Unlock()
	if e.Disabled {
		return
	}
	var p bus.Plugin
	if e.Name == GroupName {
		p = &group{onEntry: g.onEntry}
	} else {
		m, ok := bus.LookupModule(e.Name)
		if !ok {
			g.fail(fmt.Errorf("%w %q", ErrUnknownPlugin, e.Name))
			return
		}
		p = m.New()
	}
	done := g.started(e)
	f, err := ctx.PluginAs(e.ID, p, e.Config) // logs by the entry's id
	done(err)
	c.fiber = f
	if err != nil {
		g.fail(&entryError{id: e.ID, name: e.Name, line: e.Line, err: err})
	}
}

// started reports that e begins to apply (see OnEntry) and returns what
// reports the end; a group entry is not reported, its entries are.
func (g *group) started(e Entry) func(error) {
	if g.onEntry == nil || e.Name == GroupName {
		return func(error) {}
	}
	return g.onEntry(e)
}

// entryError is the error of an entry that failed to apply: its id and
// line, then the plugin's error, without repeating the plugin's name.
type entryError struct {
	id, name string
	line     int
	err      error
}

func (e *entryError) Error() string {
	msg := e.err.Error()
	var pe *bus.PluginError
	if errors.As(e.err, &pe) && pe.Plugin == e.name && pe.Op == "apply" {
		msg = strings.TrimPrefix(pe.Err.Error(), pe.Plugin+": ")
	}
	return fmt.Sprintf("%s (line %d): %s", e.id, e.line, msg)
}

func (e *entryError) Unwrap() error { return e.err }

func (g *group) fail(err error) {
	g.mu.Lock()
	g.errs = append(g.errs, err)
	g.mu.Unlock()
}

// Reconfigure reconciles the running children with a new list of entries.
func (g *group) Reconfigure(ctx *bus.Context, config any) error {
	entries, err := entriesOf(config)
	if err != nil {
		return err
	}
	_, err = g.reconcile(ctx, entries)
	return err
}

// Changes says what a reload did, by entry id: Applied, the new entries
// (and those enabled again); Updated, those whose config changed;
// Reapplied, those whose plugin name changed; Disposed, those gone;
// Disabled, those now disabled (disposed if they ran); Kept, the others.
type Changes struct {
	Applied, Updated, Reapplied, Disposed, Disabled, Kept []string
}

func (g *group) reconcile(ctx *bus.Context, entries []Entry) (Changes, error) {
	var ch Changes
	next := map[string]Entry{}
	for _, e := range entries {
		next[e.ID] = e
	}
	g.mu.Lock()
	g.errs = nil
	old := g.children
	order := g.order
	g.mu.Unlock()

	// Disposed: ids gone, or whose name or enablement changed (nothing
	// runs for an entry disabled before and still); last first.
	for i := len(order) - 1; i >= 0; i-- {
		id := order[i]
		c := old[id]
		e, ok := next[id]
		if ok && (e.Name == c.entry.Name && e.Disabled == c.entry.Disabled || e.Disabled && c.entry.Disabled) {
			continue
		}
		if c.fiber != nil {
			_ = c.fiber.Dispose()
		}
		g.mu.Lock()
		delete(g.children, id)
		g.mu.Unlock()
		switch {
		case !ok:
			ch.Disposed = append(ch.Disposed, id)
		case e.Disabled:
			ch.Disabled = append(ch.Disabled, id)
		case c.entry.Disabled:
			// Enabled again: applied below.
		default:
			ch.Reapplied = append(ch.Reapplied, id)
		}
	}
	g.mu.Lock()
	g.order = g.order[:0]
	for _, id := range order {
		if _, ok := g.children[id]; ok {
			g.order = append(g.order, id)
		}
	}
	g.mu.Unlock()

	var errs []error
	for _, e := range entries {
		g.mu.Lock()
		c, running := g.children[e.ID]
		g.mu.Unlock()
		if !running {
			g.add(ctx, e)
			switch {
			case contains(ch.Reapplied, e.ID), contains(ch.Disabled, e.ID):
			case e.Disabled:
				ch.Disabled = append(ch.Disabled, e.ID)
			default:
				ch.Applied = append(ch.Applied, e.ID)
			}
			continue
		}
		if e.Disabled {
			// Disabled before and still: nothing runs to update.
			c.entry = e
			ch.Kept = append(ch.Kept, e.ID)
			continue
		}
		if c.entry.fingerprint == e.fingerprint {
			ch.Kept = append(ch.Kept, e.ID)
			continue
		}
		c.entry = e
		ch.Updated = append(ch.Updated, e.ID)
		if c.fiber == nil {
			continue
		}
		done := g.started(e)
		err := c.fiber.Update(e.Config)
		done(err)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.ID, err))
		}
	}
	g.mu.Lock()
	errs = append(errs, g.errs...)
	g.mu.Unlock()
	return ch, errors.Join(errs...)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

var groups sync.Map // *bus.Fiber -> *group

func groupOf(f *bus.Fiber) (*group, bool) {
	g, ok := groups.Load(f)
	if !ok {
		return nil, false
	}
	return g.(*group), true
}

// Composition is a loaded file applied to a bus.
type Composition struct {
	fiber *bus.Fiber
	group *group
	file  *File
}

// ApplyOption configures [Apply].
type ApplyOption func(*group)

// OnEntry makes the composition call start when it begins to apply an
// entry, at Apply and at every reload (an entry new, applied again or
// updated; not a group, whose entries are reported), and the function
// start returns once that apply has returned, with its error. Applies
// run one after another, so a program can show with it which plugin it
// waits for (a server that takes seconds to start).
func OnEntry(start func(Entry) (done func(error))) ApplyOption {
	return func(g *group) { g.onEntry = start }
}

// Apply mounts the file's entries under c as one group fiber. Entries that
// fail to apply are reported in the returned error; the others keep
// running, and so does the composition, which is returned in every case
// but a nil file.
func Apply(c *bus.Context, f *File, opts ...ApplyOption) (*Composition, error) {
	if f == nil {
		return nil, errors.New("config: nil file")
	}
	g := &group{}
	for _, o := range opts {
		o(g)
	}
	fiber, err := c.Plugin(g, f.Entries)
	if err != nil {
		return nil, err
	}
	comp := &Composition{fiber: fiber, group: g, file: f}
	return comp, comp.Err()
}

// Err joins the errors of the entries that failed to apply.
func (c *Composition) Err() error {
	c.group.mu.Lock()
	defer c.group.mu.Unlock()
	return errors.Join(c.group.errs...)
}

// File returns the file the composition was last applied or reloaded
// from, for a host that shows or diffs what is in force before a Reload.
func (c *Composition) File() *File { return c.file }

// Fiber returns the fiber of the entry with the given id, searching nested
// groups, or nil.
func (c *Composition) Fiber(id string) *bus.Fiber { return c.group.find(id) }

func (g *group) find(id string) *bus.Fiber {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch, ok := g.children[id]; ok {
		return ch.fiber
	}
	for _, ch := range g.children {
		if ch.entry.Name != GroupName || ch.fiber == nil {
			continue
		}
		if sub, ok := groupOf(ch.fiber); ok {
			if f := sub.find(id); f != nil {
				return f
			}
		}
	}
	return nil
}

// Reload reconciles the running composition with f: only what changed is
// disposed, applied or updated.
func (c *Composition) Reload(f *File) (Changes, error) {
	ch, err := c.group.reconcile(c.fiber.Context(), f.Entries)
	c.file = f
	return ch, err
}

// Dispose disposes every plugin of the composition.
func (c *Composition) Dispose() error { return c.fiber.Dispose() }
