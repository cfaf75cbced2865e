package session

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors callers branch on with errors.Is. Each kind of bad input
// has its own sentinel; errors that concern one line of a log also carry
// the line (see [CorruptError]).
var (
	// ErrNotFound: no session with that id.
	ErrNotFound = errors.New("session: not found")
	// ErrExists: a session with that id already exists.
	ErrExists = errors.New("session: already exists")
	// ErrConflict: an append expected a different next seq than the store
	// has (another writer got there first).
	ErrConflict = errors.New("session: conflict")
	// ErrCorrupt: a line of a log is not a well-formed record or header.
	ErrCorrupt = errors.New("session: corrupt log")
	// ErrMalformed: a line that is not JSON, or not a record or header of
	// this format (missing or mistyped fields, unknown envelope fields).
	ErrMalformed = errors.New("session: malformed line")
	// ErrTornTail: the last line of a log was cut short by a crash (it has
	// no trailing newline). Loaders drop it.
	ErrTornTail = errors.New("session: torn last line")
	// ErrVersion: the log has a format version this package cannot read.
	ErrVersion = errors.New("session: unsupported version")
	// ErrUnknownType: an event type that is neither core, registered with
	// [RegisterType], nor marked ignorable.
	ErrUnknownType = errors.New("session: unknown event type")
	// ErrSeqGap: a seq skips ahead of the next index.
	ErrSeqGap = errors.New("session: seq gap")
	// ErrDuplicateSeq: a seq repeats or goes back.
	ErrDuplicateSeq = errors.New("session: duplicate seq")
	// ErrInvalidReplace: a replace whose endpoints are not on the surface,
	// are out of order, or whose sources do not cite every shadowed event;
	// or a surface field on an event that is not a surface event.
	ErrInvalidReplace = errors.New("session: invalid replace")
	// ErrInvalidPayload: data that is not JSON, or not the payload of its
	// event type.
	ErrInvalidPayload = errors.New("session: invalid payload")
	// ErrInvalidEvent: an envelope that breaks a structural rule: a missing
	// type, turn or step where the type requires one, a step without a
	// turn, a source that is not an earlier seq, an ignorable core type.
	ErrInvalidEvent = errors.New("session: invalid event")
	// ErrInvalidScope: a turn or step that does not fit the event type (a
	// request/header outside a turn, a chunk outside a step). It matches
	// ErrInvalidEvent too.
	ErrInvalidScope error = &subError{"session: invalid event scope", ErrInvalidEvent}
	// ErrNoCallID: a tool call, start or result without its call id (or a
	// call without its tool name). It matches ErrInvalidPayload too.
	ErrNoCallID error = &subError{"session: invalid payload: tool call without an id or name", ErrInvalidPayload}
	// ErrInvalidID: a session id that is empty or not a plain name.
	ErrInvalidID = errors.New("session: invalid id")
	// ErrOpenTurn: a fork or seed boundary inside an open turn, or a
	// reconcile of a session whose turn is open (see [CheckReconcile]).
	ErrOpenTurn = errors.New("session: boundary inside an open turn")
	// ErrReentrantAppend: an append to a session from inside a listener of
	// an append to the same session.
	ErrReentrantAppend = errors.New("session: append from inside its own dispatch")
	// ErrClosed: the session was closed.
	ErrClosed = errors.New("session: closed")
	// ErrLocked: another writer holds the session.
	ErrLocked = errors.New("session: locked by another writer")
)

// CorruptError names the line of a log (1-based; line 1 is the header)
// with a defect, and the defect. It matches [ErrCorrupt] with errors.Is and
// unwraps to the specific cause, another sentinel of this package
// ([ErrMalformed], [ErrSeqGap], [ErrDuplicateSeq], [ErrInvalidReplace],
// [ErrInvalidPayload], [ErrInvalidEvent], [ErrTornTail]). A log of another
// version or with an unknown non-ignorable type is not corrupt but refused:
// those errors match [ErrVersion] and [ErrUnknownType], not ErrCorrupt,
// and still name the line in their message.
type CorruptError struct {
	Line int
	Err  error
}

func (e *CorruptError) Error() string {
	// Without the package's "session: ": the caller names the log, and
	// the line is what this error adds.
	return fmt.Sprintf("line %d: %s", e.Line, strings.TrimPrefix(e.Err.Error(), "session: "))
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes every CorruptError match ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// subError is a sentinel that is a special case of another.
type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string { return e.msg }
func (e *subError) Unwrap() error { return e.parent }

// RecordError is a record line that is a well-formed envelope but breaks
// a rule of the record alone (see [NewRecord]): [DecodeRecord] names the
// record, so that a verifier can name the rule of the contract it
// breaks. It unwraps to the cause, which matches one of [ErrInvalidEvent]
// (or [ErrInvalidScope]), [ErrInvalidReplace], [ErrInvalidPayload] (or
// [ErrNoCallID]), [ErrUnknownType] or [ErrDuplicateSeq].
type RecordError struct {
	Seq        int64
	Type       string
	Turn, Step int
	Err        error
}

func (e *RecordError) Error() string { return e.Err.Error() }

func (e *RecordError) Unwrap() error { return e.Err }

// LockError is an [ErrLocked] error that says who holds the session, for
// a caller that waits for it to show whom it waits for. Stores with
// leases return it, wrapped, when another holder has the session.
type LockError struct {
	// Holder names the holder as the store knows it: a process and host,
	// a lease's holder name.
	Holder string
	// Expires is when the holder's lease runs out unless it is renewed;
	// zero when the lock lasts as long as its holder (a file lock).
	Expires time.Time
	// Err is the store's error; it matches ErrLocked.
	Err error
}

func (e *LockError) Error() string { return e.Err.Error() }

func (e *LockError) Unwrap() error { return e.Err }

// NotFound is the error of a store that holds no session id: its message
// names the id once ("session X not found") where a wrapped ErrNotFound
// would repeat the package at each layer; errors.Is(err, ErrNotFound)
// holds.
func NotFound(id string) error { return &notFoundError{id: id} }

type notFoundError struct{ id string }

func (e *notFoundError) Error() string        { return fmt.Sprintf("session %s not found", e.id) }
func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

// InvalidID is the error of an id that is not a session id: its message
// says so once (`"x.jsonl" is not a session id`); errors.Is(err,
// ErrInvalidID) holds.
func InvalidID(id string) error { return &invalidIDError{id: id} }

type invalidIDError struct{ id string }

func (e *invalidIDError) Error() string        { return fmt.Sprintf("%q is not a session id", e.id) }
func (e *invalidIDError) Is(target error) bool { return target == ErrInvalidID }

// StoreError is the error of a store's operation op on session id (id
// may be empty: an operation on the whole store), saying each thing once:
// "jsonl: load 01ABC: line 3: seq gap" rather than "jsonl: load 01ABC:
// session: line 3: session: seq gap". A bare [ErrNotFound], or the
// [NotFound] of id, is returned as NotFound(id): "session 01ABC not
// found", whatever the store and operation. It is nil for a nil err, and
// unwraps to err: errors.Is and errors.As see err's chain unchanged.
func StoreError(store, op, id string, err error) error {
	if err == nil {
		return nil
	}
	if id != "" && (err == ErrNotFound || err.Error() == NotFound(id).Error() && errors.Is(err, ErrNotFound)) {
		return NotFound(id)
	}
	if _, ok := err.(*invalidIDError); ok {
		return err // it names the id and what is wrong with it
	}
	return &storeError{store: store, op: op, id: id, err: err}
}

type storeError struct {
	store, op, id string
	err           error
}

func (e *storeError) Error() string {
	var b strings.Builder
	b.WriteString(e.store)
	b.WriteString(": ")
	b.WriteString(e.op)
	if e.id != "" {
		b.WriteByte(' ')
		b.WriteString(e.id)
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.err.Error(), "session: "))
	return b.String()
}

func (e *storeError) Unwrap() error { return e.err }
