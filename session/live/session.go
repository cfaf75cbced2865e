package live

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Session is a live, append-only log. Its methods are safe for concurrent
// use: appends are serialized (each one's dispatch included, so observers
// see commits in seq order) and reads never wait for an append's
// listeners, so a listener may read the session it is observing.
type Session struct {
	m     *Manager
	info  session.Info
	c     *bus.Context // scoped to the session, on its fiber
	fiber *bus.Fiber   // the session's lifetime (see lifetime.go)

	appendMu sync.Mutex        // serializes Append, held across its dispatch
	closed   bool              // guarded by appendMu
	one      [1]session.Record // the batch handed to the store, guarded by appendMu

	mu  sync.RWMutex      // guards log
	log *session.LogState // the records, the seq counter, the memoized fold and header

	size       atomic.Int64 // the log's encoded length, in bytes
	ended      atomic.Bool  // closed, readable without waiting for an append
	parkedSize int64        // size when parked, guarded by m.hot.mu
	seal       seal         // the signing state, guarded by appendMu
	batch      batch        // the records not yet handed to the store (batch.go)
}

// newSession makes the live session of a valid log.
func newSession(m *Manager, info session.Info, records []session.Record) (*Session, error) {
	log, err := session.NewLogState(records)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", info.ID, err)
	}
	return newSessionOf(m, info, log)
}

// newSessionOf makes the live session of a log already validated, and
// begins its lifetime.
func newSessionOf(m *Manager, info session.Info, log *session.LogState) (*Session, error) {
	s := &Session{m: m, info: info, log: log}
	var size int64
	for _, r := range log.Records() {
		size += int64(r.LineLen())
	}
	s.size.Store(size)
	if err := s.begin(); err != nil {
		return nil, err
	}
	return s, nil
}

// ID returns the session id.
func (s *Session) ID() string { return s.info.ID }

// Subject implements [bus.Subjecter]: dispatches about a session (such as
// [Created]) reach the listeners scoped to it.
func (s *Session) Subject() any { return s.info.ID }

// Info returns the session's header.
func (s *Session) Info() session.Info {
	info := s.info
	if info.Parent != nil {
		p := *info.Parent
		info.Parent = &p
	}
	return info
}

// Context returns the bus context the session dispatches on, scoped to
// the session and bound to its lifetime: listeners and effects
// registered through it receive only this session's dispatches and are
// disposed when the session closes.
func (s *Session) Context() *bus.Context { return s.c }

// Records returns the log: a copy of the session's list, so writing it
// changes nothing but the copy. The records are immutable and shared.
func (s *Session) Records() []session.Record {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.log.Records())
}

// Backward returns an iterator over the log's records from the latest to
// the first, as the log stood when Backward was called. It copies nothing:
// it hands out the immutable records, never the session's list.
func (s *Session) Backward() iter.Seq[session.Record] {
	// Small enough to inline, so that the iterator of a range over it
	// need not be allocated.
	recs := s.view()
	return func(yield func(session.Record) bool) {
		for i := len(recs) - 1; i >= 0; i-- {
			if !yield(recs[i]) {
				return
			}
		}
	}
}

// view returns the log's records, shared (see [session.LogState.Records]).
func (s *Session) view() []session.Record {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.log.Records()
}

// Size returns the length of the log as encoded, in bytes: what a
// [HotLimits] bound counts.
func (s *Session) Size() int64 { return s.size.Load() }

// isClosed reports whether Close was called.
func (s *Session) isClosed() bool { return s.ended.Load() }

// last returns the log's last record, if any.
func (s *Session) last() (session.Record, bool) {
	recs := s.view()
	if len(recs) == 0 {
		return session.Record{}, false
	}
	return recs[len(recs)-1], true
}

// Len returns the number of records, which is the next seq.
func (s *Session) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.log.Len()
}

// Messages returns the fold of the log: equal to
// DeriveMessages(s.Records()), the projection of the memoized surface,
// made for this call and owned by the caller: writing it changes nothing
// the session or anyone else holds.
func (s *Session) Messages() []session.Message {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.log.Messages() // made for this call
}

// Header returns the latest logged request header (normalized, see
// [DeriveHeader]) and whether there is one.
func (s *Session) Header() (session.Header, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.log.Header()
	return session.CloneHeader(h), ok
}

// Append commits ev as the next record and returns it.
//
// The session assigns the seq (the log's length) and the time (from the
// manager's clock, UTC, to the millisecond) and encodes the event once;
// the record is immutable from then on. The record must satisfy the
// structural rules (see [NewRecord]; a replace must fit the surface).
// Then, in order:
//
//  1. Committed.Check: the [bus.Veto] listeners see a [Commit]; a veto
//     fails the append and nothing is committed (the seq is not used).
//  2. The record is appended to the store and to the session.
//  3. Committed.Observe: the Committed listeners see the same commit;
//     their failures are logged and never undo the commit.
//
// Appending to a session from inside a listener of one of its own appends,
// with the context the listener was given (or one derived from it), is an
// ErrReentrantAppend error. (An append from a listener with an unrelated
// context, or one that waits for another goroutine appending to the same
// session, deadlocks: the session's appends are serial; don't.)
func (s *Session) Append(ctx context.Context, ev session.Event) (session.Record, error) {
	if ctx.Value(dispatchKey{s}) != nil {
		return session.Record{}, fmt.Errorf("session %s: append %s: %w", s.info.ID, ev.Type, session.ErrReentrantAppend)
	}
	if err := ctx.Err(); err != nil {
		return session.Record{}, fmt.Errorf("session %s: append %s: %w", s.info.ID, ev.Type, err)
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if s.closed {
		return session.Record{}, fmt.Errorf("session %s: append %s: %w", s.info.ID, ev.Type, session.ErrClosed)
	}
	rec, err := s.appendLocked(ctx, ev)
	if err == nil {
		s.seal.appended = true
		s.autoCheckpoint(ctx, rec)
	}
	return rec, err
}

// appendLocked is Append with appendMu held.
func (s *Session) appendLocked(ctx context.Context, ev session.Event) (session.Record, error) {
	// The log changes only under appendMu, held here: staging reads it
	// without mu.
	staged, err := s.log.Stage(session.LogTime(s.m.clock()), &ev)
	if err != nil {
		return session.Record{}, fmt.Errorf("session %s: append: %w", s.info.ID, err)
	}
	rec := staged.Record()
	commit, ctx := s.prepare(ctx, rec)
	if err := Committed.Check(ctx, s.c, commit); err != nil {
		return session.Record{}, fmt.Errorf("session %s: append %s: %w", s.info.ID, rec.Type(), err)
	}
	err = s.handOver(ctx, rec)
	if err != nil {
		return session.Record{}, fmt.Errorf("session %s: append %s: %w", s.info.ID, rec.Type(), err)
	}
	s.mu.Lock()
	err = s.log.Commit(staged)
	s.mu.Unlock()
	s.size.Add(int64(rec.LineLen()))
	if err != nil { // cannot happen: appendMu is held from Stage to Commit
		return session.Record{}, fmt.Errorf("session %s: append %s: %w", s.info.ID, rec.Type(), err)
	}
	// The commit happened; observers run even if ctx is cancelled now.
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	_ = Committed.Observe(ctx, s.c, commit)
	return rec, nil
}

// Flush returns once every record appended so far is durable (for stores
// that buffer; see [Flusher]), writing the session's batch (see batch.go).
func (s *Session) Flush(ctx context.Context) error {
	if batched, err := s.flushBatch(ctx); err != nil {
		return fmt.Errorf("session %s: flush: %w", s.info.ID, err)
	} else if batched {
		return nil // written durably, and what was staged made durable (batch.go)
	}
	if f, ok := s.m.store.(session.Flusher); ok {
		if err := f.Flush(ctx, s.info.ID); err != nil {
			return fmt.Errorf("session %s: flush: %w", s.info.ID, err)
		}
	}
	return nil
}

// Close flushes the session, refuses further appends with ErrClosed,
// removes it from its manager's live sessions, releases the store's
// hold on it (see [Releaser]) and ends its lifetime: what was registered
// through [Session.Context] is disposed. Reads keep working. Closing
// twice does nothing. Closing a session from a listener of its own append is an
// ErrReentrantAppend error.
func (s *Session) Close(ctx context.Context) error {
	if ctx.Value(dispatchKey{s}) != nil {
		return fmt.Errorf("session %s: close: %w", s.info.ID, session.ErrReentrantAppend)
	}
	s.appendMu.Lock()
	if s.closed {
		s.appendMu.Unlock()
		return nil
	}
	// What the session holds past its last checkpoint is signed before
	// it closes.
	cerr := s.closeCheckpoint(ctx)
	s.closed = true
	s.ended.Store(true)
	s.appendMu.Unlock()
	err := s.Flush(ctx)
	if e := s.stopBatching(ctx); err == nil {
		err = e
	}
	if err == nil {
		err = cerr
	}
	s.m.forget(s)
	if r, ok := s.m.store.(session.Releaser); ok {
		if e := r.Release(s.info.ID); e != nil && err == nil {
			err = fmt.Errorf("session %s: release: %w", s.info.ID, e)
		}
	}
	s.m.forgetStored(s.info.ID)
	_ = s.fiber.Dispose()
	return err
}

// dispatchKey marks the context the listeners of an append of a session
// receive.
type dispatchKey struct{ s *Session }

// prepare makes an append's commit of rec, and returns the context its
// listeners get: one that marks this dispatch, so an append or close made
// with it from one of them fails instead of deadlocking (ctx itself when
// there are no listeners to mark it for).
func (s *Session) prepare(ctx context.Context, rec session.Record) (Commit, context.Context) {
	if !s.m.watched() {
		return Commit{&commit{session: s, record: rec}}, ctx
	}
	// The commit and the marked context are one allocation.
	d := &dispatch{commit: commit{session: s, record: rec}, parent: ctx}
	return Commit{&d.commit}, d
}

// dispatch is an append's commit, and the context its listeners get:
// context.WithValue(parent, dispatchKey{commit.session}, true), without
// an allocation of its own.
type dispatch struct {
	commit commit
	parent context.Context
}

func (d *dispatch) Deadline() (time.Time, bool) { return d.parent.Deadline() }
func (d *dispatch) Done() <-chan struct{}       { return d.parent.Done() }
func (d *dispatch) Err() error                  { return d.parent.Err() }

func (d *dispatch) Value(key any) any {
	if k, ok := key.(dispatchKey); ok && k.s == d.commit.session {
		return true
	}
	return d.parent.Value(key)
}

func (d *dispatch) String() string {
	return fmt.Sprintf("%v.WithValue(live.dispatchKey, true)", d.parent)
}
