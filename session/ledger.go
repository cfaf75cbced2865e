package session

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Ledger is implemented by stores that keep, beside a session's log, the
// results of its tool calls by idempotency key: what a tool written in Go
// needs for "same key, same result" across crashes and continuations
// (agentloop/ledger builds that on it). A session's entries are stored
// with the session and go with it: deleting a session deletes them.
//
// An entry is written once and never changes. Keys are the session's
// idempotency keys ([IdempotencyKey]) or keys that extend one
// ("<session>/<call>/<anything>"), checked by [CheckLedgerKey]; values are
// any bytes. No lease is needed: put-if-absent makes two writers of one
// key agree on the first value stored, whichever process they run in.
type Ledger interface {
	// Record stores value under key in session id's ledger unless a value
	// is stored there already, and returns the value stored under key
	// (value itself when it was absent; a copy the caller may keep). The
	// entry is durable when Record returns. An unknown session is
	// ErrNotFound; a key that is not session id's is ErrLedgerKey.
	Record(ctx context.Context, id, key string, value []byte) (stored []byte, err error)
	// Lookup returns the value stored under key in session id's ledger,
	// ok false when there is none. An unknown session is ErrNotFound; a
	// key that is not session id's is ErrLedgerKey.
	Lookup(ctx context.Context, id, key string) (value []byte, ok bool, err error)
}

// ErrLedgerKey: a ledger key that is not one of the named session's
// idempotency keys (another session's, or not a key at all).
var ErrLedgerKey = errors.New("session: not a ledger key of the session")

// CheckLedgerKey returns an [ErrLedgerKey] error unless key is session
// id's: id, a '/', then a non-empty rest that is valid UTF-8 (a call id,
// which the log holds as text, and what a tool appends to it). So one
// session can never read or fill the entries of another through its
// ledger.
func CheckLedgerKey(id, key string) error {
	sid, rest, ok := ParseIdempotencyKey(key)
	if !ok || sid != id || !utf8.ValidString(rest) {
		return fmt.Errorf("%w: %q is not a key of session %q", ErrLedgerKey, Excerpt(key, 80), id)
	}
	return nil
}
