package vigil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// WorkOptions configure [Runtime.Work].
type WorkOptions struct {
	// Worker names this worker in the queue (a job's Worker); the default
	// is host:pid.
	Worker string
	// Concurrency is how many jobs run at once (default 1).
	Concurrency int
	// OnJob, when set, is called as each claimed job ends, with the turn's
	// result (nil when none ran) and its error; not for a job handed back.
	OnJob func(job session.Job, res *Result, err error)
	// ApprovalTTL, when positive, bounds how long a tool call waits for a
	// decision: a call whose approval/request is older is denied, by
	// [TTLDecider] with a reason naming the TTL, through the queue like
	// any decision (the model is told, the turn goes on). The worker looks
	// at every session once as it starts, then at the sessions its own
	// jobs leave suspended; with several workers, the shortest TTL wins.
	ApprovalTTL time.Duration
	// Drain bounds how long Work waits, once ctx is done, for the running
	// jobs to end; 0 waits as long as they take. When it runs out, Work
	// hands the jobs still running back at once (see [ErrHandedBack]).
	Drain time.Duration
}

// claimRetry bounds the pause after a claim failed for another reason
// than the end of the work (the database went away): the worker tries
// again, so that it reconnects on its own.
const claimRetry = 2 * time.Second

// Work runs the jobs of the store's queue ([Runtime.QueueTurn],
// [Runtime.QueueDecision]) — queued by this process or any other sharing
// the store — until ctx is done. Each job runs under its session's lease,
// held by the claim. A job whose previous worker died is carried on from
// the log: the session is opened (which repairs the cut-off tail), and a
// turn that ended interrupted is continued ([agentloop.Agent.Continue]),
// a suspended step whose calls are all decided resumed; a job whose turn
// had already ended is only finished. A cancelled session's running job
// is cancelled (its turn ends aborted).
//
// When ctx is done Work claims no more and returns once the running jobs
// have ended: a drain. The running turns are finished, not cut short,
// unless they outlast o.Drain: then each is handed back at once (its
// session stops taking its writes, its claim is released) and Work
// returns an error wrapping [ErrHandedBack]. Another worker carries those
// jobs on from their logs right away, as it would a crashed worker's once
// the lease expired; their turns' goroutines here end at their next write,
// which fails. A process that handed jobs back should exit without
// closing the runtime, which would end those turns aborted.
func (r *Runtime) Work(ctx context.Context, o WorkOptions) error {
	q, err := r.Queue()
	if err != nil {
		return err
	}
	if o.Worker == "" {
		host, _ := os.Hostname()
		o.Worker = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	var ttl *ttlWatch
	if o.ApprovalTTL > 0 {
		ttl = newTTLWatch(ctx, r, o.ApprovalTTL)
		defer ttl.stop()
	}
	var wg sync.WaitGroup
	if ttl != nil {
		wg.Go(ttl.scan)
	}
	var running runningJobs
	for range max(o.Concurrency, 1) {
		wg.Go(func() {
			for {
				c, err := q.Claim(ctx, o.Worker)
				if ctx.Err() != nil {
					if err == nil {
						// Claimed as the drain began: hand it back.
						r.handBack(c)
					}
					return
				}
				if err != nil {
					r.log.Warn("claiming a job failed; retrying", "error", err)
					select {
					case <-ctx.Done():
						return
					case <-time.After(claimRetry):
					}
					continue
				}
				job := running.add(c)
				res, err := r.runClaim(context.WithoutCancel(ctx), job)
				running.remove(job)
				if ttl != nil && !job.wasHandedBack() && (errors.Is(err, agentloop.ErrSuspended) || res == nil && err == nil) {
					ttl.check(c.Job().Session) // the session may wait for decisions
				}
				if o.OnJob != nil && !job.wasHandedBack() {
					o.OnJob(c.Job(), res, err)
				}
			}
		})
	}
	return r.drain(ctx, &wg, &running, o.Drain)
}

// drain waits for the workers of wg to end once ctx is done, up to limit
// (0: no limit); then it hands the jobs still running back.
func (r *Runtime) drain(ctx context.Context, wg *sync.WaitGroup, running *runningJobs, limit time.Duration) error {
	ended := make(chan struct{})
	go func() {
		wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
	}
	if limit <= 0 {
		<-ended
		return nil
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-ended:
		return nil
	case <-t.C:
	}
	jobs := running.all()
	for _, j := range jobs {
		if err := j.handBack(); err != nil {
			r.log.Warn("handing a job back failed; it is claimed again once its lease expires", "job", j.claim.Job().ID, "error", err)
		} else {
			r.log.Info("the drain ran out: handed the job back", "job", j.claim.Job().ID, "session", j.claim.Job().Session)
		}
	}
	select {
	case <-ended: // every job had ended meanwhile
		return nil
	default:
	}
	return fmt.Errorf("%w: %d after %s", ErrHandedBack, len(jobs), limit)
}

func (r *Runtime) handBack(c session.Claim) {
	if err := c.Release(context.Background()); err != nil {
		r.log.Warn("handing a job back failed; it is claimed again once its lease expires", "job", c.Job().ID, "error", err)
	}
}

// runClaim runs a claimed job and ends the claim: finished, unless the
// lease was lost (fenced), which makes the job another worker's.
func (r *Runtime) runClaim(ctx context.Context, rj *runningJob) (*Result, error) {
	c := rj.claim
	job := c.Job()
	log := r.log.With("job", job.ID, "session", job.Session, "kind", job.Kind, "attempt", job.Attempts)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rj.setStop(cancel)
	go func() {
		select {
		case <-c.Cancelled():
			log.Info("the session was cancelled; cancelling its job")
			cancel()
		case <-ctx.Done():
		}
	}()
	res, err := r.runJob(ctx, rj)
	cancelled := false
	select {
	case <-c.Cancelled():
		cancelled = true
	default:
	}
	switch {
	case rj.wasHandedBack():
		log.Debug("the job was handed back as it ran", "error", err)
		return res, err
	case errors.Is(err, session.ErrFenced):
		log.Error("lost the session's lease mid-job; it is another worker's now", "error", err)
		// Ending the claim frees what it holds here; the job is not
		// touched, its row carries the new claim's epoch.
		if rerr := c.Release(context.WithoutCancel(ctx)); rerr != nil && !errors.Is(rerr, session.ErrFenced) {
			log.Debug("ending the fenced claim", "error", rerr)
		}
		return res, err
	case err != nil && !errors.Is(err, agentloop.ErrSuspended):
		log.Warn("job ended with an error", "error", err)
	default:
		log.Debug("job done")
	}
	if ferr := c.Finish(context.WithoutCancel(ctx), outcomeOf(res, err, cancelled)); ferr != nil {
		log.Error("finishing the job failed", "error", ferr)
		if err == nil {
			err = ferr
		}
	}
	return res, err
}

// runJob opens the claimed job's session under the claim's lease and
// runs the job, or carries it on when an earlier claim started it.
func (r *Runtime) runJob(ctx context.Context, rj *runningJob) (*Result, error) {
	c := rj.claim
	job := c.Job()
	var in jobInput
	if err := json.Unmarshal(job.Input, &in); err != nil {
		return nil, fmt.Errorf("job %s: input: %w", job.ID, err)
	}
	mgr, err := r.Manager()
	if err != nil {
		return nil, err
	}
	release, err := r.claim(ctx, job.Session, true)
	if err != nil {
		return nil, err
	}
	defer release()
	sess, done, err := rj.open(func() (*live.Session, func(context.Context) error, error) {
		return live.OpenHeld(ctx, mgr, job.Session)
	})
	if err != nil {
		return nil, err
	}
	// A sub-agent's child session resumes with its own agent, as
	// Runtime.Decide resumes it; a job that names its agent, with it.
	agent, err := r.jobAgent(ctx, sess, in.Agent)
	if err != nil {
		_ = done(context.WithoutCancel(ctx))
		return nil, err
	}
	var res *Result
	switch n := int64(sess.Len()); {
	case job.Base < 0:
		if err = c.Start(ctx, n); err == nil {
			res, err = r.perform(ctx, agent, sess, job.Kind, in)
		}
	case n <= job.Base:
		// Started by a worker that died before it logged anything.
		res, err = r.perform(ctx, agent, sess, job.Kind, in)
	default:
		res, err = carryOn(ctx, agent, sess, in.By)
	}
	if derr := done(context.WithoutCancel(ctx)); derr != nil && err == nil {
		err = derr
	}
	return res, err
}

// perform does what a job asks, on its session.
func (r *Runtime) perform(ctx context.Context, agent *agentloop.Agent, sess *live.Session, kind string, in jobInput) (*Result, error) {
	switch kind {
	case JobTurn:
		return agent.Run(ctx, sess, in.Prompt, agentloop.By(in.By))
	case JobDecide:
		return decideAndResume(ctx, agent, sess, in)
	}
	return nil, fmt.Errorf("unknown job kind %q", kind)
}

// carryOn takes up a job an earlier worker got going, from what its log
// shows (repaired on open): a turn cut short is continued, a suspended
// step whose calls are all decided resumed; anything else had ended. by
// names who posted the job's turn.
//
// A turn that ended aborted was stopped on purpose (a cancel, an
// abandon): a person may continue it (vigil run --continue), but a worker
// that takes up the job after the first one died does not undo the stop.
func carryOn(ctx context.Context, agent *agentloop.Agent, sess *live.Session, by string) (*Result, error) {
	if s := session.Suspended(sess.Records()); s != nil {
		if !s.Ready() {
			return nil, nil
		}
		return agent.Resume(ctx, sess)
	}
	if _, reason, err := agentloop.LastTurn(sess); err != nil || reason == session.ReasonAborted {
		return nil, err
	}
	res, err := agent.Continue(ctx, sess, agentloop.By(by))
	if errors.Is(err, agentloop.ErrNothingToContinue) {
		return nil, nil
	}
	return res, err
}

// outcomeOf is how a job that ran ended, for the queue to keep: done
// (a turn that suspended on approvals, an abandon that aborted its turn,
// too), cancelled when its session was cancelled as it ran, else failed
// with the error's [JobErrorCode].
// Reason is the turn's end reason ("suspended" for a suspended one).
func outcomeOf(res *Result, err error, cancelled bool) session.Outcome {
	var o session.Outcome
	if res != nil {
		o.Reason, o.Checkpoint = res.Reason, res.Checkpoint
	}
	switch {
	case err == nil, errors.Is(err, agentloop.ErrSuspended), errors.Is(err, ErrAbandoned):
		o.State = session.JobDone // what was asked was done
		return o
	case cancelled:
		o.State = session.JobCancelled
	default:
		o.State = session.JobFailed
	}
	o.Error = &session.JobError{Code: JobErrorCode(err), Message: err.Error()}
	return o
}

// The codes of a failed job's error ([session.JobError].Code), the codes
// of the HTTP API's errors where they mean the same.
const (
	JobCodeDecided         = "decided"          // the call was decided already
	JobCodeNotPending      = "not_pending"      // nothing waits for that decision
	JobCodeInvalidDecision = "invalid_decision" // a decision no person may give
	JobCodeNotFound        = "not_found"        // the session or the call is unknown
	JobCodeCancelled       = "cancelled"        // cut short (cancelled, abandoned)
	JobCodeBudget          = "budget"           // a budget limit ended the turn
	JobCodeError           = "error"            // anything else
)

// JobErrorCode classifies the error a job ended with.
func JobErrorCode(err error) string {
	var budget *agentloop.BudgetError
	switch {
	case errors.Is(err, session.ErrAlreadyDecided), errors.Is(err, session.ErrDuplicateJob):
		return JobCodeDecided
	case errors.Is(err, session.ErrNotSuspended), errors.Is(err, session.ErrNotPending):
		return JobCodeNotPending
	case errors.Is(err, session.ErrInvalidDecision):
		return JobCodeInvalidDecision
	case errors.Is(err, session.ErrNotFound), errors.Is(err, session.ErrUnknownCall):
		return JobCodeNotFound
	case errors.Is(err, context.Canceled), errors.Is(err, ErrAbandoned):
		return JobCodeCancelled
	case errors.As(err, &budget):
		return JobCodeBudget
	}
	return JobCodeError
}
