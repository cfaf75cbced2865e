package jsonl

import (
	"context"

	"github.com/vigil-run/vigil/session"
)

// Depth implements [session.Depther], from the journal as it is now.
func (s *Store) Depth(ctx context.Context) ([]session.JobCount, error) {
	q, err := s.queue()
	if err != nil {
		return nil, session.StoreError("jsonl", "depth", "", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.catchUp(); err != nil {
		return nil, session.StoreError("jsonl", "depth", "", err)
	}
	jobs := make([]session.Job, 0, len(q.jobs))
	for _, j := range q.jobs {
		if !q.gone(j) {
			jobs = append(jobs, q.view(j))
		}
	}
	return session.CountJobs(jobs), nil
}

var _ session.Depther = (*Store)(nil)
