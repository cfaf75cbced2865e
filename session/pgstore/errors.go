package pgstore

import (
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/session"
)

var (
	// ErrBusy: another holder has the session's turn lease (see
	// [Store.Lease]); a turn is running elsewhere. It wraps
	// [session.ErrLocked], so callers that handle any store's "another
	// writer holds the session" need not know this package.
	ErrBusy = fmt.Errorf("pgstore: session busy: %w", session.ErrLocked)

	// ErrSchemaTooNew: the database holds a schema version newer than this
	// package knows; a newer Vigil migrated it. Nothing was changed.
	ErrSchemaTooNew = errors.New("pgstore: database schema is newer than this vigil")
)
