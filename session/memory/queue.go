package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vigil-run/vigil/session"
)

// queue is the job queue of a backing; b.mu guards it.
type queue struct {
	seq  int64
	jobs []*job // unfinished, oldest first
	done []*job // finished, in the order they finished (see retire)
}

type job struct {
	job       session.Job // State and Worker are derived from claim and Outcome
	claim     *claim      // the running claim, nil when queued
	cancelled bool        // Cancel signalled the running claim
}

type claim struct {
	s         *Store
	j         *job
	lease     *lease
	worker    string
	snapshot  session.Job // the job as claimed
	cancel    chan struct{}
	closeOnce sync.Once
}

func (j *job) view() session.Job {
	v := j.job
	v.Input = slices.Clone(v.Input)
	switch {
	case v.Outcome.State != "": // finished: its last worker kept
		v.State = v.Outcome.State
	case j.claim != nil:
		v.State, v.Worker = session.JobRunning, j.claim.worker
	default:
		v.State, v.Worker = session.JobQueued, ""
	}
	return v
}

// retire moves j, unfinished, to the finished jobs with outcome o, and
// drops the finished jobs past their retention. b.mu is held.
func (q *queue) retire(j *job, o session.Outcome) {
	q.jobs = slices.DeleteFunc(q.jobs, func(u *job) bool { return u == j })
	j.job.Outcome, j.job.Finished, j.claim = o, time.Now(), nil
	q.done = append(q.done, j)
	q.done = slices.Delete(q.done, 0, session.Expired(q.done, func(j *job) time.Time { return j.job.Finished }, 0))
}

// taken reports whether a job of session sid decides call: unfinished,
// or finished done. b.mu is held.
func (q *queue) taken(sid, call string) bool {
	same := func(j *job) bool { return j.job.Session == sid && j.job.Call == call }
	return slices.ContainsFunc(q.jobs, same) ||
		slices.ContainsFunc(q.done, func(j *job) bool { return same(j) && j.job.Outcome.State == session.JobDone })
}

// Enqueue implements [session.Queue].
func (s *Store) Enqueue(ctx context.Context, in session.Job) (session.Job, int, error) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.logs[in.Session]; !ok {
		return session.Job{}, 0, session.StoreError("memory", "enqueue", in.Session, session.ErrNotFound)
	}
	if in.Call != "" && b.queue.taken(in.Session, in.Call) {
		return session.Job{}, 0, fmt.Errorf("memory: enqueue %s: call %s: %w", in.Session, in.Call, session.ErrDuplicateJob)
	}
	b.queue.seq++
	j := &job{job: session.Job{
		ID:       fmt.Sprintf("%020d", b.queue.seq),
		Session:  in.Session,
		Kind:     in.Kind,
		Call:     in.Call,
		Input:    slices.Clone(in.Input),
		Enqueued: time.Now(),
		Base:     -1,
	}}
	ahead := 0
	for _, o := range b.queue.jobs {
		if o.job.Session == in.Session {
			ahead++
		}
	}
	b.queue.jobs = append(b.queue.jobs, j)
	b.notify()
	return j.view(), ahead, nil
}

// Jobs implements [session.Queue].
func (s *Store) Jobs(ctx context.Context, id string) ([]session.Job, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	var out []session.Job
	for _, j := range s.b.queue.jobs {
		if j.job.Session == id {
			out = append(out, j.view())
		}
	}
	return out, nil
}

// Job implements [session.Queue].
func (s *Store) Job(ctx context.Context, id string) (session.Job, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	for _, list := range [][]*job{s.b.queue.jobs, s.b.queue.done} {
		for _, j := range list {
			if j.job.ID == id {
				return j.view(), nil
			}
		}
	}
	return session.Job{}, session.StoreError("memory", "job "+id, "", session.ErrNotFound)
}

// Claim implements [session.Queue].
func (s *Store) Claim(ctx context.Context, worker string) (session.Claim, error) {
	b := s.b
	for {
		if err := ctx.Err(); err != nil {
			return nil, session.StoreError("memory", "claim", "", err)
		}
		b.mu.Lock()
		if c := s.claimLocked(worker); c != nil {
			b.mu.Unlock()
			return c, nil
		}
		ch := b.wake()
		b.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-ch:
		}
	}
}

// claimLocked claims the oldest job that is its session's first and whose
// session's lease s can take; b.mu is held.
func (s *Store) claimLocked(worker string) *claim {
	seen := map[string]bool{}
	for _, j := range s.b.queue.jobs {
		sid := j.job.Session
		if seen[sid] {
			continue
		}
		seen[sid] = true
		if j.claim != nil {
			continue
		}
		le := s.acquire(sid)
		if le == nil {
			continue
		}
		j.job.Attempts++
		c := &claim{s: s, j: j, lease: le, worker: worker, cancel: make(chan struct{})}
		j.claim = c
		c.snapshot = j.view()
		return c
	}
	return nil
}

// Cancel implements [session.Queue].
func (s *Store) Cancel(ctx context.Context, id string) (int, error) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.logs[id]; !ok {
		return 0, session.StoreError("memory", "cancel", id, session.ErrNotFound)
	}
	n := 0
	for _, j := range slices.Clone(b.queue.jobs) {
		if j.job.Session != id {
			continue
		}
		n++
		if j.claim == nil {
			b.queue.retire(j, session.Outcome{State: session.JobCancelled})
			continue
		}
		j.cancelled = true
		j.claim.closeOnce.Do(func() { close(j.claim.cancel) })
	}
	return n, nil
}

// crash drops s's leases and hands its running jobs back, as if its
// process had died (the cancelled ones are dropped).
func (s *Store) crash() {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, le := range b.leases {
		if le.h == s {
			delete(b.leases, id)
		}
	}
	for _, j := range slices.Clone(b.queue.jobs) {
		if j.claim == nil || j.claim.s != s {
			continue
		}
		j.claim = nil
		if j.cancelled {
			b.queue.retire(j, session.Outcome{State: session.JobCancelled})
		}
	}
	b.notify()
}

func (c *claim) Job() session.Job {
	v := c.snapshot
	v.Input = slices.Clone(v.Input)
	return v
}

func (c *claim) Cancelled() <-chan struct{} { return c.cancel }

// Start implements [session.Claim].
func (c *claim) Start(ctx context.Context, base int64) error {
	b := c.s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.j.claim != c {
		return session.StoreError("memory", "start job "+c.snapshot.ID, "", session.ErrJobDone)
	}
	if c.j.job.Base < 0 {
		c.j.job.Base, c.j.job.Started = base, time.Now()
	}
	return nil
}

// Finish implements [session.Claim].
func (c *claim) Finish(ctx context.Context, o session.Outcome) error {
	o, err := o.Normalize()
	if err != nil {
		return session.StoreError("memory", "finish job "+c.snapshot.ID, "", err)
	}
	return c.end(&o)
}

// Release implements [session.Claim]. A job cancelled while it ran is
// dropped instead (cancelled): the cancel was for it too.
func (c *claim) Release(ctx context.Context) error { return c.end(nil) }

// end ends the claim: finished with outcome o, or handed back when o is nil.
func (c *claim) end(o *session.Outcome) error {
	b := c.s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.j.claim != c {
		return session.StoreError("memory", "end job "+c.snapshot.ID, "", session.ErrJobDone)
	}
	c.j.claim = nil
	if o == nil && c.j.cancelled {
		o = &session.Outcome{State: session.JobCancelled}
	}
	if o != nil {
		c.j.job.Worker = c.worker
		b.queue.retire(c.j, *o)
	}
	b.releaseLocked(c.snapshot.Session, c.lease)
	b.notify()
	return nil
}
