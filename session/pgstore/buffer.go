package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vigil-run/vigil/session"
)

// Appends under a held lease are buffered, as the jsonl store's writer
// buffers under its file lock: the lease makes this store the session's
// only writer, so the records between two durability points go to the
// database as one statement and one (synchronous) commit, checked by the
// seq and the lease's epoch in that statement. The points are those where
// the jsonl writer fsyncs: a [Store.Flush] (the loop's, before any tool
// runs; a suspension's), the end of the claim or lease, a read of the
// session by this store, and a short timer (bufferDelay, or closeDelay
// once a record closes a step: step/end, turn/end, session/end-seed).
// What is buffered is visible to no other process and reported durable
// to nobody: followers read only committed rows.
type pending struct {
	mu    sync.Mutex
	id    string
	epoch int64    // the lease the lines were appended under
	next  int64    // the seq of lines[0]
	lines [][]byte // appended, not yet written
	due   time.Time
	timer *time.Timer
	// err is the failure of a write that was not the caller's (the
	// timer's): the buffered records may be lost, so every later append
	// and flush under this lease fails with it, and the writer reloads.
	err error
}

var (
	// bufferDelay bounds how long a buffered record waits for its commit.
	bufferDelay = 10 * time.Millisecond
	// closeDelay bounds it once a record closed a step: short, so that a
	// follower sees a step's end at once, yet long enough for the records
	// a turn appends right after (its turn/end) to share the commit.
	closeDelay = 2 * time.Millisecond
	// bufferLines bounds the records buffered for one session.
	bufferLines = 512
)

// buffered returns the buffer of session id under the lease of epoch,
// made if missing; nil when the store holds no such lease (then the
// append is written at once).
func (s *Store) buffered(id string, epoch int64) *pending {
	if s.durable || epoch <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.leases[id]; l == nil || l.epoch != epoch {
		return nil
	}
	p := s.pending[id]
	if p == nil || p.epoch != epoch {
		p = &pending{id: id, epoch: epoch}
		s.pending[id] = p
	}
	return p
}

// pendingOf returns the buffer of session id, nil when there is none.
func (s *Store) pendingOf(id string) *pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending[id]
}

// dropPending forgets the buffer of session id if it is p (the lease it
// was for ended).
func (s *Store) dropPending(id string, p *pending) {
	s.mu.Lock()
	if s.pending[id] == p {
		delete(s.pending, id)
	}
	s.mu.Unlock()
}

// add buffers records at next, and writes the buffer when it is full.
func (s *Store) add(ctx context.Context, p *pending, next int64, records []session.Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if len(p.lines) == 0 {
		p.next = next
	} else if end := p.next + int64(len(p.lines)); next != end {
		return fmt.Errorf("%w: the log continues at %d, not %d", session.ErrConflict, end, next)
	}
	p.lines = append(p.lines, lines(records)...)
	if len(p.lines) >= bufferLines {
		return s.writeLocked(ctx, p)
	}
	delay := bufferDelay
	if session.ClosesStep(records) {
		delay = closeDelay
	}
	s.arm(p, delay)
	return nil
}

// arm makes the timer write p within delay.
func (s *Store) arm(p *pending, delay time.Duration) {
	due := time.Now().Add(delay)
	if p.timer != nil && !p.due.IsZero() && !p.due.After(due) {
		return
	}
	p.due = due
	if p.timer == nil {
		p.timer = time.AfterFunc(delay, func() { s.timed(p) })
		return
	}
	p.timer.Reset(delay)
}

// timed is the timer's write of p.
func (s *Store) timed(p *pending) {
	ctx, cancel := context.WithTimeout(s.bg, 30*time.Second)
	defer cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := s.writeLocked(ctx, p); err != nil && p.err == nil {
		p.err = err
		s.log.Warn("writing a session's buffered appends failed", "session", p.id, "error", err)
	}
}

// writeLocked writes p's lines in one statement, with p.mu held.
func (s *Store) writeLocked(ctx context.Context, p *pending) error {
	if p.err != nil {
		return p.err
	}
	if len(p.lines) == 0 {
		return nil
	}
	if err := s.write(ctx, p.id, p.epoch, p.next, p.lines); err != nil {
		return err
	}
	p.next += int64(len(p.lines))
	clear(p.lines)
	p.lines = p.lines[:0]
	p.due = time.Time{}
	return nil
}

// writeBuffered writes what this store buffered for id, if anything,
// before a read of the session: so that the read is complete. A write
// that fails is the writer's to learn of, at its next append or flush;
// the read then gives what the database holds, as a reader in another
// process would.
func (s *Store) writeBuffered(ctx context.Context, id string) {
	p := s.pendingOf(id)
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := s.writeLocked(ctx, p); err != nil && p.err == nil {
		p.err = err
	}
}

// endPending writes what this store buffered for id under the lease l,
// which is ending, and forgets the buffer.
func (s *Store) endPending(ctx context.Context, l *lease) error {
	p := s.pendingOf(l.id)
	if p == nil || p.epoch != l.epoch {
		return nil
	}
	p.mu.Lock()
	err := s.writeLocked(ctx, p)
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	s.dropPending(l.id, p)
	if errors.Is(err, errPoolClosed) {
		return nil
	}
	return err
}
