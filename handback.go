package vigil

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// ErrHandedBack is returned by [Runtime.Work] when its drain ran out
// ([WorkOptions].Drain) and it handed the jobs still running back to the
// queue.
var ErrHandedBack = errors.New("vigil: the drain ran out: the running jobs were handed back")

// handBackTimeout bounds the store calls of a hand-back (the last flush,
// the claim's release): the process is about to exit.
const handBackTimeout = 10 * time.Second

// runningJob is a job a worker of this process runs: what a hand-back
// needs to stop it writing and give it back.
type runningJob struct {
	claim session.Claim

	mu         sync.Mutex // held while the job's session opens, so that a hand-back waits for it
	sess       *live.Session
	stop       context.CancelFunc // cancels the job's context
	handedBack bool
}

// setStop records what cancels the job's context.
func (j *runningJob) setStop(stop context.CancelFunc) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stop = stop
}

// open opens the job's session under the claim's lease with fn, unless
// the job was handed back already (then it is ErrHandedBack and nothing
// is opened, so nothing is written).
func (j *runningJob) open(fn func() (*live.Session, func(context.Context) error, error)) (*live.Session, func(context.Context) error, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.handedBack {
		return nil, nil, ErrHandedBack
	}
	sess, done, err := fn()
	j.sess = sess
	return sess, done, err
}

// wasHandedBack reports whether the job was handed back: its claim is
// ended, and its worker must not finish it.
func (j *runningJob) wasHandedBack() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.handedBack
}

// handBack stops the job writing and hands it back: its session is
// closed (an append made by its turn from now on fails, and writes
// nothing), then its claim is released: the job is queued again, its
// session's lease is free, and another worker carries it on from the log
// at once, as it would a crashed worker's once the lease expired. Last,
// the job's context is cancelled, so that the turn here stops soon.
func (j *runningJob) handBack() error {
	j.mu.Lock()
	if j.handedBack {
		j.mu.Unlock()
		return nil
	}
	j.handedBack = true
	sess, stop := j.sess, j.stop
	j.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), handBackTimeout)
	defer cancel()
	var err error
	if sess != nil {
		err = sess.Close(ctx)
	}
	err = errors.Join(err, j.claim.Release(ctx))
	if stop != nil {
		// The turn stops calling its model and tools: whatever it would
		// log of that (its end, aborted) is refused by the closed session.
		stop()
	}
	return err
}

// runningJobs are the jobs the workers of one Work run.
type runningJobs struct {
	mu   sync.Mutex
	jobs map[*runningJob]struct{}
}

func (rs *runningJobs) add(c session.Claim) *runningJob {
	j := &runningJob{claim: c}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.jobs == nil {
		rs.jobs = map[*runningJob]struct{}{}
	}
	rs.jobs[j] = struct{}{}
	return j
}

func (rs *runningJobs) remove(j *runningJob) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.jobs, j)
}

// all returns the jobs running now.
func (rs *runningJobs) all() []*runningJob {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]*runningJob, 0, len(rs.jobs))
	for j := range rs.jobs {
		out = append(out, j)
	}
	return out
}
