package live

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vigil-run/vigil/session"
)

// Batches. A store whose every append is a round trip and a durable
// commit ([session.Batcher]: PostgreSQL) is handed the records of a
// session run under its lease in batches, at the points where the jsonl
// store's writer fsyncs: a [Session.Flush] (the loop's before any tool
// runs, a suspension's, the turn's end when the session is parked or
// closed), a record that says a tool is about to run or a turn's first
// request (see precedesEffect: the request is only staged, on a
// [session.Stager]), and a short timer, shorter once a record closed a
// step. The lease makes this session the log's only writer, so a batch is checked
// by the store exactly as its records one by one would be (the seq, the
// lease's epoch), in one statement. Until written, a record is this
// process's alone: no follower sees it, and nothing reports it durable.
// A batch that fails to be written breaks the session: every later append
// and flush fails with that error, and the log is opened afresh.
type batch struct {
	mu   sync.Mutex // serializes the writes; taken under appendMu, never the other way
	on   bool       // the session runs under its lease on a Batcher
	recs []session.Record
	err  error // a write failed
	// staged: a write was staged (see [session.Stager]) and no durable
	// write or flush has followed it.
	staged bool
	timer  *time.Timer
	due    time.Time // when the timer writes; zero while nothing waits
	closed time.Time // when a record of the batch first closed a step; zero if none
}

var (
	// batchDelay bounds how long a record waits to be written.
	batchDelay = 10 * time.Millisecond
	// batchCloseDelay bounds it once a record closed a step (step/end,
	// turn/end, session/end-seed) and nothing followed: short, so that a
	// follower sees a step's end at once while the model thinks, and long
	// enough for the records that follow it at once (the last step's end
	// is followed by the turn's) to share its commit. When more records
	// follow (a model that answers at once), the step's end waits up to
	// batchDelay, so that the next step's end or the turn's shares it.
	batchCloseDelay = 2 * time.Millisecond
	// batchMax bounds the records a batch holds.
	batchMax = 256
)

// startBatching makes the session hand its appends to the store in
// batches, if the store takes them so: the caller holds the lease.
func (s *Session) startBatching() {
	b, ok := s.m.store.(session.Batcher)
	if !ok || !b.AppendsInBatches() {
		return
	}
	s.batch.mu.Lock()
	s.batch.on, s.batch.err = true, nil
	s.batch.mu.Unlock()
}

// stopBatching writes what is batched and appends one record at a time
// again: the caller is letting the lease go.
func (s *Session) stopBatching(ctx context.Context) error {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	err := s.writeBatchLocked(ctx, true)
	s.batch.on = false
	if s.batch.timer != nil {
		s.batch.timer.Stop()
	}
	return err
}

// precedesEffect reports whether rec is written at once, and whether
// durably. It says a tool is about to run (tool/start, tool/retry): a
// crash past the tool's effect must never leave a log that says the call
// did not start (the loop flushes before running its tools too; that
// flush then finds the batch written), so the batch is written durably.
// Or it is the request of a turn's first step: a worker that dies or
// stops while the model answers must leave a turn to repair and
// continue, not a job that looks never started, so the batch is stored
// before the model is called; but a lost request has no effect to
// answer for, so a [session.Stager] stages it, and it becomes durable
// with the turn's next durable write.
func precedesEffect(rec session.Record) (now, durable bool) {
	switch rec.Type() {
	case session.TypeToolStart, session.TypeToolRetry:
		return true, true
	case session.TypeRequestDigest:
		return rec.Step() == 1, false
	}
	return false, false
}

// parkBatch ends the batching as the session is parked, its turn over
// and its lease about to end: a [session.Deferrer] is handed the batch,
// to write with the lease's end (a claim's Finish: one commit for the
// turn's end and the job's); any other store has it written now. It
// reports whether the session batched.
func (s *Session) parkBatch(ctx context.Context) (bool, error) {
	b := &s.batch
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.on {
		return false, nil
	}
	b.on = false
	if b.timer != nil {
		b.timer.Stop()
	}
	d, ok := s.m.store.(session.Deferrer)
	if !ok || b.err != nil || len(b.recs) == 0 {
		return true, s.writeBatchLocked(ctx, true)
	}
	err := d.AppendDeferred(ctx, s.info.ID, b.recs[0].Seq(), b.recs)
	clear(b.recs)
	b.recs = b.recs[:0]
	b.due, b.closed = time.Time{}, time.Time{}
	if err != nil {
		b.err = err
	}
	// The lease's end writes them durably, or fails: what was staged
	// before is durable then too.
	b.staged = false
	return true, err
}

// handOver hands rec to the store: at once, or into the batch.
func (s *Session) handOver(ctx context.Context, rec session.Record) error {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	if !s.batch.on {
		s.one[0] = rec
		err := s.m.store.Append(ctx, s.info.ID, rec.Seq(), s.one[:])
		s.one[0] = session.Record{}
		return err
	}
	if s.batch.err != nil {
		return s.batch.err
	}
	s.batch.recs = append(s.batch.recs, rec)
	if now, durable := precedesEffect(rec); now {
		return s.writeBatchLocked(ctx, durable)
	}
	if len(s.batch.recs) >= batchMax {
		return s.writeBatchLocked(ctx, true)
	}
	now := time.Now()
	switch {
	case session.ClosesStep(s.batch.recs[len(s.batch.recs)-1:]):
		if s.batch.closed.IsZero() {
			s.batch.closed = now
		}
		s.armLocked(now, now.Add(batchCloseDelay), false)
	case !s.batch.closed.IsZero():
		// A step closed and the next one goes on at once (a model that
		// answers at once): its end waits, batchDelay at most, to share
		// a commit with what follows (the next step's, the turn's end).
		s.armLocked(now, s.batch.closed.Add(batchDelay), true)
	default:
		s.armLocked(now, now.Add(batchDelay), false)
	}
	return nil
}

// armLocked makes the timer write the batch at due, or earlier if it
// was to write earlier already, unless later.
func (s *Session) armLocked(now, due time.Time, later bool) {
	b := &s.batch
	if !b.due.IsZero() && !b.due.After(due) && !later {
		return
	}
	b.due = due
	if b.timer == nil {
		b.timer = time.AfterFunc(due.Sub(now), s.timedWrite)
		return
	}
	b.timer.Reset(due.Sub(now))
}

// timedWrite is the timer's write of the batch.
func (s *Session) timedWrite() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	if err := s.writeBatchLocked(ctx, true); err != nil {
		s.m.log.Warn("writing a session's batched records failed", "session", s.info.ID, "error", err)
	}
}

// writeBatchLocked appends the batch to the store in one call: durably,
// or staged when not durable and the store stages (see
// [session.Stager]). A durable write with nothing batched makes what was
// staged durable (a flush of the store).
func (s *Session) writeBatchLocked(ctx context.Context, durable bool) error {
	b := &s.batch
	if b.err != nil {
		return b.err
	}
	b.due = time.Time{}
	stager, stages := s.m.store.(session.Stager)
	stage := !durable && stages
	var err error
	switch {
	case len(b.recs) == 0 && durable && b.staged:
		if f, ok := s.m.store.(session.Flusher); ok {
			err = f.Flush(ctx, s.info.ID)
		}
	case len(b.recs) == 0:
		return nil
	case stage:
		err = stager.AppendStaged(ctx, s.info.ID, b.recs[0].Seq(), b.recs)
	default:
		err = s.m.store.Append(ctx, s.info.ID, b.recs[0].Seq(), b.recs)
	}
	if err != nil && len(b.recs) == 0 {
		b.err = fmt.Errorf("the staged records were not made durable: %w", err)
	} else if err != nil {
		b.err = fmt.Errorf("a batch of %d records from seq %d was not written: %w", len(b.recs), b.recs[0].Seq(), err)
	}
	if err != nil {
		return b.err
	}
	b.staged = stage || b.staged && !durable
	b.closed = time.Time{}
	clear(b.recs)
	b.recs = b.recs[:0]
	return nil
}

// flushBatch writes the batch durably (and with it what was staged),
// reporting whether the session batches.
func (s *Session) flushBatch(ctx context.Context) (bool, error) {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	if !s.batch.on {
		return false, nil
	}
	return true, s.writeBatchLocked(ctx, true)
}
