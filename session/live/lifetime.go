package live

import (
	"context"
	"fmt"

	"github.com/vigil-run/vigil/bus"
)

// A live session's lifetime is a bus fiber, a child of its manager's:
// opening the session makes it, [Session.Close] disposes it. Whatever
// anyone keeps about the session hangs on that fiber — a listener
// registered through [Session.Context], an effect registered there
// ([bus.Context.Effect]) that drops a plugin's per-session state — so
// the bus undoes it all when the session closes, and a listener of a
// closed session never hears a later session opened under the same id.
// A manager whose own fiber is disposed (its store plugin unloaded)
// disposes its sessions' fibers with it, which closes them.

// lifetime is the anonymous plugin whose fiber is one session's life.
type lifetime struct{ s *Session }

func (lifetime) Name() string { return "" }

// Apply closes the session when its fiber is disposed by an ancestor;
// disposed by Close, it finds the session closed already.
func (l lifetime) Apply(c *bus.Context, _ any) error {
	return c.Effect(func() func() {
		return func() { _ = l.s.Close(context.Background()) }
	})
}

// begin gives s its fiber and its scoped context.
func (s *Session) begin() error {
	f, err := s.m.c.Plugin(lifetime{s}, nil)
	if err != nil {
		return fmt.Errorf("session %s: %w", s.info.ID, err)
	}
	s.fiber = f
	id := s.info.ID
	s.c = f.Context().Scope(func(subject any) bool { return subject == id })
	return nil
}

// Done returns a channel closed once the session is closed (its lifetime
// ended): a goroutine that serves the session stops on it.
func (s *Session) Done() <-chan struct{} { return s.c.Done() }

// OnClose registers fn to run once when the session closes, after its
// last append: the hook per-session state of other packages is released
// by. It reports false, registering nothing, when the session is closed
// already (the caller drops its state itself). fn must not block on the
// session.
func (s *Session) OnClose(fn func()) bool {
	return s.c.Effect(func() func() { return fn }) == nil
}

// abort ends the lifetime of a session that was never published, or whose
// publication failed: closed, without a flush or a release of the store's
// hold, which may be another live copy's.
func (s *Session) abort() {
	s.appendMu.Lock()
	s.closed = true
	s.ended.Store(true)
	s.appendMu.Unlock()
	_ = s.fiber.Dispose()
}
