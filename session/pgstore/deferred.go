package pgstore

import (
	"context"
	"fmt"

	"github.com/vigil-run/vigil/session"
)

// deferred are the records a live session handed over as its turn ended
// under a queue claim's lease ([Store.AppendDeferred]), kept to be
// written by the statement that ends the claim: the turn's end commits
// with the job's finish and the lease's release, one commit.
type deferred struct {
	fence fence // the claim's lease
	next  int64 // the seq of lines[0]
	lines [][]byte
}

// AppendDeferred implements [session.Deferrer]: while this store holds
// the session's lease by a queue claim, the records are kept for the
// claim's Finish (or Release), which writes them in its own statement,
// checked by the seq and the lease's fence as an append is, and fails if
// they cannot be; [Store.Flush] writes them too. Otherwise it is
// [Store.Append].
func (s *Store) AppendDeferred(ctx context.Context, id string, next int64, records []session.Record) error {
	if err := session.CheckSeqs(next, records); err != nil {
		return session.StoreError("pgstore", "append", id, err)
	}
	s.mu.Lock()
	l := s.leases[id]
	if s.durable || l == nil || !l.claimed || len(records) == 0 {
		s.mu.Unlock()
		return s.Append(ctx, id, next, records)
	}
	d := s.deferred[id]
	switch {
	case d == nil || d.fence != (fence{l.epoch, l.token}):
		s.deferred[id] = &deferred{fence: fence{l.epoch, l.token}, next: next, lines: lines(records)}
	case d.next+int64(len(d.lines)) == next:
		d.lines = append(d.lines, lines(records)...)
	default:
		s.mu.Unlock()
		return fmt.Errorf("pgstore: append %s: %w: the log continues at %d, not %d", id, session.ErrConflict, d.next+int64(len(d.lines)), next)
	}
	s.mu.Unlock()
	return nil
}

// takeDeferred removes and returns the records kept for session id under
// the lease of fence f, nil when there are none.
func (s *Store) takeDeferred(id string, f fence) *deferred {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.deferred[id]
	if d == nil {
		return nil
	}
	delete(s.deferred, id)
	if d.fence != f {
		return nil // another lease's: it ended without them
	}
	return d
}

// writeDeferred writes the records kept for id under the lease this store
// holds on it, if any, as an append.
func (s *Store) writeDeferred(ctx context.Context, id string) error {
	d := s.takeDeferred(id, s.heldFence(id))
	if d == nil {
		return nil
	}
	return s.write(ctx, id, d.fence, d.next, d.lines)
}

var _ session.Deferrer = (*Store)(nil)
