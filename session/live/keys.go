package live

import (
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Created is emitted for every session a [Manager] makes available: new,
// seeded, forked and loaded. Listeners may read the whole log; an error
// fails the operation that made the session (the log stays stored). The
// invariants and external plugins listen to it.
var Created = bus.NewEvent[*Session]("session/created")

// Committed is the session/event dispatch of [Session.Append], split
// around the commit: [bus.Veto] listeners see the [Commit] before it is
// committed and may veto it; Committed listeners observe the very same
// commit (the same record) after it is committed, and their failures are
// logged, never undo the commit. The invariants and external plugins
// listen to it.
var Committed = bus.NewEvent[Commit]("session/event")

// Sessions is the service under which every store plugin provides the
// [Manager]: the agent plugin requires it, and hosts (package vigil,
// cmd/vigil) read it.
var Sessions = bus.NewService[*Manager]("session/manager")

// StoreService is the service under which every store plugin provides
// the [session.Store] its Manager writes to, for a plugin that needs the
// store itself.
var StoreService = bus.NewService[session.Store]("session/store")

// Commit is the payload of [Committed]: one record of one session. Like
// a [session.Record], it is a value holding the only reference to data
// no exported name reaches, so a listener handed one can read it and
// keep it, but has no way to change the record that the other listeners,
// the invariants plugin and the log see.
type Commit struct{ c *commit }

type commit struct {
	session *Session
	record  session.Record
}

// IsZero reports whether c is the zero Commit, which no append made.
func (c Commit) IsZero() bool { return c.c == nil }

// Session returns the session the record was appended to.
func (c Commit) Session() *Session { return c.c.session }

// Record returns the record.
func (c Commit) Record() session.Record { return c.c.record }

// Subject implements [bus.Subjecter]: a commit is about its session.
func (c Commit) Subject() any { return c.c.session.ID() }
