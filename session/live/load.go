package live

import (
	"context"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Loading is emitted when a [Manager] opens a session from its store,
// before it reads the log. A listener that reads every record of a
// loaded log (the invariants plugin checks each one) reads them through
// the [Load] it is handed, in the pass that decodes, validates and folds
// them, rather than reading the whole log again on [Created]. An error
// fails the open.
var Loading = bus.NewEvent[*Load]("session/loading")

// Load is the payload of [Loading]: one open of a stored session. Its
// methods are for the listeners of that dispatch, while they run.
type Load struct {
	id     string
	each   []func(session.Record)
	opened []func(context.Context, *Session) error
}

// ID returns the id of the session being opened.
func (l *Load) ID() string { return l.id }

// Subject implements [bus.Subjecter]: a load is about its session.
func (l *Load) Subject() any { return l.id }

// Each registers fn to read every record of the log in seq order, each
// as soon as the store's decoder validated it (with the payload it
// decoded at hand: [session.DecodeData] returns it without decoding),
// then the records that repair appends. If the open fails, what fn saw
// is not a session's: [Load.Opened] is never called.
func (l *Load) Each(fn func(session.Record)) { l.each = append(l.each, fn) }

// Opened registers fn to run once the session is made of the records
// Each handed out, before [Created] is emitted for it; an error fails
// the open, as a Created listener's does.
func (l *Load) Opened(fn func(ctx context.Context, s *Session) error) {
	l.opened = append(l.opened, fn)
}

// reader returns the function the store's decoder hands each record to,
// nil when no listener reads them.
func (l *Load) reader() func(session.Record) {
	switch len(l.each) {
	case 0:
		return nil
	case 1:
		return l.each[0]
	}
	return func(r session.Record) {
		for _, fn := range l.each {
			fn(r)
		}
	}
}

// read hands records that joined the log after the load (repair's
// closers) to the readers.
func (l *Load) read(records []session.Record) {
	if fn := l.reader(); fn != nil {
		for _, r := range records {
			fn(r)
		}
	}
}

// finish runs the Opened functions on s, the session made of the log.
func (l *Load) finish(ctx context.Context, s *Session) error {
	if l == nil {
		return nil
	}
	for _, fn := range l.opened {
		if err := fn(ctx, s); err != nil {
			return err
		}
	}
	return nil
}
