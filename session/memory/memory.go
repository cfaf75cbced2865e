// Package memory is a [session.Store] that keeps logs in memory: for
// tests, demos and sessions that need not outlive the process. Everything
// appended is "durable" at once, for as long as the Store lives.
//
// It also has what a store shared by several workers has, in process:
// turn leases ([session.Leaser]), a job queue ([session.Queue]) and
// following ([session.Follower]). [Store.Handle] opens another handle on
// the same logs, as another process sharing a store would: a lease is
// held by a handle, and a handle that holds a session's lease has it
// again at once (as store/jsonl's writer does), while another handle's
// Lease or Append of that session is [session.ErrLocked].
package memory

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/vigil-run/vigil/session"
)

// Store is an in-memory [session.Store]. The zero value is not usable;
// call [New]. It is safe for concurrent use.
type Store struct {
	b *backing
}

// backing is what the handles of one store share.
type backing struct {
	mu     sync.Mutex
	logs   map[string]*log
	leases map[string]*lease // session id -> its lease, if held
	queue  queue
	// changed is closed (and dropped) whenever a lease is released, a
	// job is enqueued, ended or handed back, or records are appended:
	// what waiters (Lease with wait, Claim, Follow) wait for. It is made
	// by the first waiter (wake), so an append nobody waits for makes
	// nothing.
	changed chan struct{}
}

type log struct {
	info    session.Info
	records records
	ledger  map[string][]byte // the session's ledger (ledger.go): it goes with the log
}

// chunkLen is how many records a full chunk of a log holds (8 KiB).
const chunkLen = 1024

// records is a log's records: one slice while the log is short, then
// full chunks of chunkLen and a last one being filled, so that an append
// never copies the records already there, as a growing slice does each
// time it outgrows its room.
type records struct {
	chunks [][]session.Record // all but the last hold chunkLen
	n      int
}

// add appends recs.
func (r *records) add(recs ...session.Record) {
	for len(recs) > 0 {
		last := len(r.chunks) - 1
		if last < 0 || len(r.chunks[last]) == chunkLen {
			var c []session.Record
			if last >= 0 {
				c = make([]session.Record, 0, chunkLen)
			} // else the first chunk grows as a slice: most logs are short
			r.chunks = append(r.chunks, c)
			last++
		}
		k := min(len(recs), chunkLen-len(r.chunks[last]))
		r.chunks[last] = append(r.chunks[last], recs[:k]...)
		r.n += k
		recs = recs[k:]
	}
}

// slice returns a new list of the records from seq from to seq to
// (excluded); nil when there are none.
func (r *records) slice(from, to int) []session.Record {
	if from >= to {
		return nil
	}
	out := make([]session.Record, 0, to-from)
	r.each(from, to, func(part []session.Record) { out = append(out, part...) })
	return out
}

// each calls f with the records from seq from to seq to (excluded), a
// chunk's part at a time.
func (r *records) each(from, to int, f func([]session.Record)) {
	for from < to {
		c, off := from/chunkLen, from%chunkLen
		end := min(to-c*chunkLen, len(r.chunks[c]))
		f(r.chunks[c][off:end])
		from = c*chunkLen + end
	}
}

// lease is a session's turn lease, held by handle h.
type lease struct {
	h *Store
}

// New returns an empty store.
func New() *Store {
	return &Store{b: &backing{
		logs:   map[string]*log{},
		leases: map[string]*lease{},
	}}
}

// Handle returns another handle on the same logs, with leases of its own,
// as another process sharing the store would have.
func (s *Store) Handle() *Store { return &Store{b: s.b} }

// notify wakes the waiters; b.mu is held.
func (b *backing) notify() {
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
}

// wake returns the channel the next notify closes; b.mu is held.
func (b *backing) wake() chan struct{} {
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.changed
}

// Create implements [session.Store].
func (s *Store) Create(ctx context.Context, info session.Info) error {
	if !session.ValidID(info.ID) {
		return fmt.Errorf("memory: create: %w: %q", session.ErrInvalidID, info.ID)
	}
	if info.Version == 0 {
		info.Version = session.Version
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if _, ok := s.b.logs[info.ID]; ok {
		return session.StoreError("memory", "create", info.ID, session.ErrExists)
	}
	s.b.logs[info.ID] = &log{info: cloneInfo(info)}
	return nil
}

// Append implements [session.Store]. While another handle holds the
// session's lease it is [session.ErrLocked].
func (s *Store) Append(ctx context.Context, id string, next int64, records []session.Record) error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	l, ok := s.b.logs[id]
	if !ok {
		return session.StoreError("memory", "append", id, session.ErrNotFound)
	}
	if le := s.b.leases[id]; le != nil && le.h != s {
		return fmt.Errorf("memory: append %s: %w (held by another handle)", id, session.ErrLocked)
	}
	if n := int64(l.records.n); n != next {
		return fmt.Errorf("memory: append %s: %w: log continues at %d, not %d", id, session.ErrConflict, n, next)
	}
	if err := session.CheckSeqs(next, records); err != nil {
		return session.StoreError("memory", "append", id, err)
	}
	l.records.add(records...)
	if len(records) > 0 {
		s.b.notify()
	}
	return nil
}

// Load implements [session.Store].
func (s *Store) Load(ctx context.Context, id string) (*session.Log, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	l, ok := s.b.logs[id]
	if !ok {
		return nil, session.StoreError("memory", "load", id, session.ErrNotFound)
	}
	return &session.Log{Info: cloneInfo(l.info), Records: l.records.slice(0, l.records.n)}, nil
}

// Info implements [session.InfoReader].
func (s *Store) Info(ctx context.Context, id string) (session.Info, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	l, ok := s.b.logs[id]
	if !ok {
		return session.Info{}, session.StoreError("memory", "info", id, session.ErrNotFound)
	}
	return cloneInfo(l.info), nil
}

// List implements [session.Store].
func (s *Store) List(ctx context.Context) ([]session.Info, error) {
	s.b.mu.Lock()
	out := make([]session.Info, 0, len(s.b.logs))
	for _, l := range s.b.logs {
		out = append(out, cloneInfo(l.info))
	}
	s.b.mu.Unlock()
	slices.SortFunc(out, func(a, b session.Info) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Fork implements [session.Store].
func (s *Store) Fork(ctx context.Context, info session.Info, tail []session.Record) error {
	if info.Parent == nil {
		return fmt.Errorf("memory: fork %s: no parent", info.ID)
	}
	if !session.ValidID(info.ID) {
		return fmt.Errorf("memory: fork: %w: %q", session.ErrInvalidID, info.ID)
	}
	if info.Version == 0 {
		info.Version = session.Version
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	p, ok := s.b.logs[info.Parent.ID]
	if !ok {
		return fmt.Errorf("memory: fork %s: parent %s: %w", info.ID, info.Parent.ID, session.ErrNotFound)
	}
	if _, ok := s.b.logs[info.ID]; ok {
		return session.StoreError("memory", "fork", info.ID, session.ErrExists)
	}
	at := info.Parent.Seq
	if at < -1 || at >= int64(p.records.n) {
		return fmt.Errorf("memory: fork %s: %w: parent %s has seqs 0..%d, not %d", info.ID, session.ErrSeqGap, p.info.ID, p.records.n-1, at)
	}
	if err := session.CheckSeqs(at+1, tail); err != nil {
		return session.StoreError("memory", "fork", info.ID, err)
	}
	l := &log{info: cloneInfo(info)}
	p.records.each(0, int(at+1), func(part []session.Record) { l.records.add(part...) })
	l.records.add(tail...)
	s.b.logs[info.ID] = l
	return nil
}

// Lease implements [session.Leaser]: the lease of id is this handle's
// until release is called (or, taken by a claim, until the claim ends);
// a handle holding it has it again at once, and one release drops it.
func (s *Store) Lease(ctx context.Context, id string, wait bool) (release func(), err error) {
	for {
		s.b.mu.Lock()
		if _, ok := s.b.logs[id]; !ok {
			s.b.mu.Unlock()
			return nil, session.StoreError("memory", "lease", id, session.ErrNotFound)
		}
		if le := s.acquire(id); le != nil {
			s.b.mu.Unlock()
			return func() { s.b.release(id, le) }, nil
		}
		ch := s.b.wake()
		s.b.mu.Unlock()
		if !wait {
			return nil, fmt.Errorf("memory: lease %s: %w (held by another handle)", id, session.ErrLocked)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("memory: lease %s: %w", id, ctx.Err())
		case <-ch:
		}
	}
}

// acquire takes id's lease for s, or returns nil when another handle holds
// it; b.mu is held.
func (s *Store) acquire(id string) *lease {
	le := s.b.leases[id]
	switch {
	case le == nil:
		le = &lease{h: s}
		s.b.leases[id] = le
	case le.h != s:
		return nil
	}
	return le
}

// release drops lease le of id, unless it was dropped already.
func (b *backing) release(id string, le *lease) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked(id, le)
}

func (b *backing) releaseLocked(id string, le *lease) {
	if b.leases[id] == le {
		delete(b.leases, id)
		b.notify()
	}
}

// Follow implements [session.Follower].
func (s *Store) Follow(ctx context.Context, id string, from int64) iter.Seq2[session.Record, error] {
	return func(yield func(session.Record, error) bool) {
		next := max(from, 0)
		for {
			s.b.mu.Lock()
			l, ok := s.b.logs[id]
			if !ok {
				s.b.mu.Unlock()
				yield(session.Record{}, session.StoreError("memory", "follow", id, session.ErrNotFound))
				return
			}
			var recs []session.Record
			if next < int64(l.records.n) {
				recs = l.records.slice(int(next), l.records.n)
			}
			ch := s.b.wake()
			s.b.mu.Unlock()
			for _, r := range recs {
				if ctx.Err() != nil || !yield(r, nil) {
					return
				}
				next++
			}
			select {
			case <-ctx.Done():
				return
			case <-ch:
			}
		}
	}
}

func cloneInfo(i session.Info) session.Info {
	if i.Parent != nil {
		p := *i.Parent
		i.Parent = &p
	}
	return i
}

var (
	_ session.Store    = (*Store)(nil)
	_ session.Leaser   = (*Store)(nil)
	_ session.Queue    = (*Store)(nil)
	_ session.Follower = (*Store)(nil)
)
