package memory

import (
	"context"
	"slices"

	"github.com/vigil-run/vigil/session"
)

// Delete implements [session.Deleter]: the log, its lease and its jobs
// go; a running claim of the session is cancelled, and its end is
// ErrJobDone.
func (s *Store) Delete(ctx context.Context, id string) error {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.logs[id]; !ok {
		return session.StoreError("memory", "delete", id, session.ErrNotFound)
	}
	delete(b.logs, id)
	delete(b.leases, id)
	of := func(j *job) bool { return j.job.Session == id }
	for _, j := range b.queue.jobs {
		if of(j) && j.claim != nil {
			j.claim.closeOnce.Do(func() { close(j.claim.cancel) })
			j.claim = nil // its end finds the job gone
		}
	}
	b.queue.jobs = slices.DeleteFunc(b.queue.jobs, of)
	b.queue.done = slices.DeleteFunc(b.queue.done, of)
	b.notify() // followers find the log gone, lease waiters try again
	return nil
}

var _ session.Deleter = (*Store)(nil)
