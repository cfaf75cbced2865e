package session

import (
	"context"
	"fmt"
	"strings"
)

// Store persists session logs. Records are immutable and may be kept as
// they are; a store must not keep the records slice it is handed. Every
// method is safe for concurrent use. [sessiontest.Run] is the conformance
// suite every implementation must pass.
type Store interface {
	// Create stores a new, empty log with header info. An existing id is
	// an ErrExists error.
	Create(ctx context.Context, info Info) error
	// Append adds records to the log of id. next is the seq the caller
	// expects the log to continue at (its current length); if the log is
	// at another length nothing is appended and the error is ErrConflict.
	// The records must have seqs next, next+1, …, else ErrSeqGap or
	// ErrDuplicateSeq. An unknown id is ErrNotFound.
	Append(ctx context.Context, id string, next int64, records []Record) error
	// Load returns the log of id. A store that can be torn by a crash
	// drops a torn last line and reports its length in Log.Torn.
	Load(ctx context.Context, id string) (*Log, error)
	// List returns the headers of every stored log, sorted by id. One
	// entry that cannot be read does not hide the others: List returns
	// the headers it could read together with a [*ListError] naming each
	// entry it could not. Any other error (the store cannot be listed at
	// all) comes with no headers.
	List(ctx context.Context) ([]Info, error)
	// Fork creates the log info as a fork: info.Parent names the source
	// log and the last seq it inherits (-1 for none); the new log holds
	// the source's records up to that seq, then tail (whose first seq
	// follows). An unknown parent is ErrNotFound, a parent seq past its
	// end ErrSeqGap, an existing id ErrExists.
	Fork(ctx context.Context, info Info, tail []Record) error
}

// EachLoader is implemented by stores that decode the logs they load
// (session/jsonl, session/pgstore): LoadEach is Load that hands each
// record to each in the decoder's pass, as [DecodeOwnedEach] does, so
// that a reader of every payload does not decode the log again.
type EachLoader interface {
	LoadEach(ctx context.Context, id string, each func(Record)) (*Log, error)
}

// LoadEach returns the log of id from s and hands each of its records to
// each, in order: in the decoder's pass when s is an [EachLoader], else
// once Load returned (a store that keeps the records it was given, as
// session/memory does, holds their payloads already). A nil each is
// Load. When the load fails, each may have seen records of the log: the
// caller drops what it made of them.
func LoadEach(ctx context.Context, s Store, id string, each func(Record)) (*Log, error) {
	if l, ok := s.(EachLoader); ok && each != nil {
		return l.LoadEach(ctx, id, each)
	}
	log, err := s.Load(ctx, id)
	if err != nil || each == nil {
		return log, err
	}
	for _, r := range log.Records {
		each(r)
	}
	return log, nil
}

// InfoReader is implemented by stores that can read a log's header
// without its records: Info returns the header of id (an unknown id is
// ErrNotFound), as Load would, at the cost of one line. Who may see a
// session is decided by its header, on every request that names one.
type InfoReader interface {
	Info(ctx context.Context, id string) (Info, error)
}

// ReadInfo returns the header of session id from s: through its
// [InfoReader] when it has one, else by loading the log.
func ReadInfo(ctx context.Context, s Store, id string) (Info, error) {
	if r, ok := s.(InfoReader); ok {
		return r.Info(ctx, id)
	}
	log, err := s.Load(ctx, id)
	if err != nil {
		return Info{}, err
	}
	return log.Info, nil
}

// Flusher is implemented by stores that buffer appends. Flush returns once
// every record appended to id so far is durable.
type Flusher interface {
	Flush(ctx context.Context, id string) error
}

// Leaser is implemented by stores that serialize turns across processes
// (store/postgres's lease, store/jsonl's file lock). Lease returns once
// the caller holds session id's turn lease, or an error wrapping
// [ErrLocked] that names the holder when another has it (unless wait,
// then it waits for it, until ctx is done). A session is opened, and an
// interrupted turn repaired, only under the lease, so never a turn that
// is still running elsewhere.
type Leaser interface {
	Lease(ctx context.Context, id string, wait bool) (release func(), err error)
}

// Releaser is implemented by stores that hold a session open for writing
// (a file lock): Release lets another writer take it.
type Releaser interface {
	Release(id string) error
}

// Batcher is implemented by stores whose every append is a round trip
// and a durable commit (store/postgres). AppendsInBatches reports that a
// live session run under the session's lease should hand the store its
// records in batches, written at its durability points (see package
// live), rather than one by one; a Batcher's Append is durable once it
// returns.
type Batcher interface {
	AppendsInBatches() bool
}

// Stager is implemented by Batchers that can store records before they
// are durable, as the jsonl store's writes are before its fsync
// (store/postgres: committed without waiting for the WAL's flush).
// AppendStaged is Append, except that the records may not be durable when
// it returns: they are visible to Load at once, a process that dies
// leaves them stored, and they become durable with the session's next
// Append or Flush (whatever process makes it). No follower is given them
// before they are durable. A live session stages the records of a turn's
// first request before the model is called, so that a worker that dies
// or stops meanwhile leaves a turn to continue, at no synchronous commit.
type Stager interface {
	AppendStaged(ctx context.Context, id string, next int64, records []Record) error
}

// Deferrer is implemented by stores that can write a turn's last records
// with the end of the lease they were appended under (store/postgres: a
// queue claim's Finish writes them in its own statement, one commit for
// the turn's end, the job's outcome and the lease's release).
// AppendDeferred is Append, except that, under such a lease, the records
// may be kept until it ends: then that end fails if they cannot be
// written, and a Flush writes them. A live session parked as its turn
// ends hands its last records over so.
type Deferrer interface {
	AppendDeferred(ctx context.Context, id string, next int64, records []Record) error
}

// Forgetter is implemented by stores that keep what they know of a
// session between holds (store/jsonl: its file's length and next seq):
// Forget drops it once the session is closed in this process, so that
// nothing of a closed session stays. Knowledge still in use is kept.
type Forgetter interface {
	Forget(id string)
}

// ListError is the error of a [Store.List] that could not read some of
// the stored logs; the headers of the others are returned with it.
type ListError struct {
	// Entries are the unreadable entries, sorted by name.
	Entries []EntryError
}

// EntryError is a stored log List could not read.
type EntryError struct {
	// Name names the entry: the session id, or the file name when the
	// store names files after ids.
	Name string
	Err  error
}

func (e *EntryError) Error() string { return e.Name + ": " + e.Err.Error() }

func (e *EntryError) Unwrap() error { return e.Err }

func (e *ListError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session: list: %d unreadable", len(e.Entries))
	for i := range e.Entries {
		b.WriteString("; ")
		b.WriteString(e.Entries[i].Error())
	}
	return b.String()
}

// Unwrap returns the entries' errors, so errors.Is sees their causes.
func (e *ListError) Unwrap() []error {
	out := make([]error, len(e.Entries))
	for i := range e.Entries {
		out[i] = &e.Entries[i]
	}
	return out
}
