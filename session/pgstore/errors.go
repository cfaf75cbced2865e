package pgstore

import (
	"errors"

	"github.com/vigil-run/vigil/session"
)

var (
	// ErrBusy: another holder has the session's turn lease (see
	// [Store.Lease]); a turn is running elsewhere. It wraps
	// [session.ErrLocked], so callers that handle any store's "another
	// writer holds the session" need not know this package.
	ErrBusy error = busyErr{}

	// ErrSchemaTooNew: the database holds a schema version newer than this
	// package knows; a newer Vigil migrated it. Nothing was changed.
	ErrSchemaTooNew = errors.New("pgstore: database schema is newer than this vigil")
)

// busyErr is ErrBusy: it is [session.ErrLocked] without repeating that
// error's message, so that a busy error reads "pgstore: session busy:
// <id>: a turn is running in <holder> …" once.
type busyErr struct{}

func (busyErr) Error() string        { return "pgstore: session busy" }
func (busyErr) Is(target error) bool { return target == session.ErrLocked }
