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
// around the commit: [bus.Veto] listeners see the *Commit before it is
// committed and may veto it; Committed listeners observe the very same
// *Commit (the same *Record) after it is committed, and their failures
// are logged, never undo the commit. The invariants and external plugins
// listen to it.
var Committed = bus.NewEvent[*Commit]("session/event")

// Sessions is the service under which every store plugin provides the
// [Manager]: the agent plugin requires it, and hosts (package vigil,
// cmd/vigil) read it.
var Sessions = bus.NewService[*Manager]("session/manager")

// StoreService is the service under which every store plugin provides
// the [session.Store] its Manager writes to, for a plugin that needs the
// store itself.
var StoreService = bus.NewService[session.Store]("session/store")

// Commit is the payload of [Committed]: one record of one session.
type Commit struct {
	Session *Session
	Record  *session.Record
}

// Subject implements [bus.Subjecter]: a commit is about its session.
func (c *Commit) Subject() any { return c.Session.ID() }
