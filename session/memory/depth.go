package memory

import (
	"context"

	"github.com/vigil-run/vigil/session"
)

// Depth implements [session.Depther].
func (s *Store) Depth(ctx context.Context) ([]session.JobCount, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	jobs := make([]session.Job, 0, len(s.b.queue.jobs))
	for _, j := range s.b.queue.jobs {
		jobs = append(jobs, j.view())
	}
	return session.CountJobs(jobs), nil
}

var _ session.Depther = (*Store)(nil)
