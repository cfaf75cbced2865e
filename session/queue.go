package session

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"
)

// Errors of the turn queue and of fenced appends.
var (
	// ErrFenced: an append made under a lease that is no longer the
	// session's (it expired and another holder took the session, and may
	// have appended since). Nothing was appended; the writer must stop
	// writing to the session.
	ErrFenced = errors.New("session: fenced: the lease was lost to another holder")
	// ErrJobDone: the job was finished or cancelled already (by this
	// claim, or the session's queue was cancelled).
	ErrJobDone = errors.New("session: job no longer queued")
	// ErrDuplicateJob: Enqueue refused a job that names a Call for which
	// the session has a job queued, running, or finished done already
	// (a decision on a tool call is taken once: see [Job.Call]).
	ErrDuplicateJob = errors.New("session: a job for this call is queued or done already")
)

// Fencer is implemented by stores whose turn leases carry an epoch, a
// fencing token checked by the append itself (store/postgres): every
// lease taken on a session has a larger epoch than every lease before it,
// and an append made under a lease of a smaller epoch than the session's
// newest is refused with [ErrFenced]. A holder that was paused or cut off
// past its lease's expiry therefore never appends again, even once the
// next holder has come and gone. [sessiontest.RunFencing] is its
// conformance suite.
type Fencer interface {
	Leaser
	// Epoch returns the epoch of the lease this store holds on id, 0 when
	// it holds none.
	Epoch(id string) int64
	// AppendFenced is [Store.Append] under the lease of epoch: when a
	// lease of a larger epoch has been taken on id since, it appends
	// nothing and returns an error wrapping ErrFenced. An epoch of 0 is an
	// append without a lease (refused while another holds a live one).
	AppendFenced(ctx context.Context, id string, epoch, next int64, records []Record) error
}

// Follower is implemented by stores that stream a log as it grows.
type Follower interface {
	// Follow yields the records of session id from seq from on: those
	// stored now, then each one as it is appended, by this process or, for
	// stores shared between processes, any other. It yields a record
	// only once it is durable (see [Flusher]): what a follower received
	// is a prefix of the log that any crash leaves. It ends without an
	// error when ctx is done, or at the first error (an unknown session is
	// [ErrNotFound]).
	Follow(ctx context.Context, id string, from int64) iter.Seq2[Record, error]
}

// JobState is where a queued job is.
type JobState string

const (
	// JobQueued: waiting for a worker (never claimed, or handed back, or
	// its worker died and its lease has not expired yet).
	JobQueued JobState = "queued"
	// JobRunning: a live worker holds it (and its session's lease).
	JobRunning JobState = "running"
	// JobDone: it finished without an error.
	JobDone JobState = "done"
	// JobFailed: it finished with an error ([Outcome].Error).
	JobFailed JobState = "failed"
	// JobCancelled: [Queue.Cancel] dropped it before it ran, or it was
	// cancelled while it ran.
	JobCancelled JobState = "cancelled"
)

// Finished reports whether s is the state of a job that ended.
func (s JobState) Finished() bool {
	return s == JobDone || s == JobFailed || s == JobCancelled
}

// The retention of finished jobs: a queue keeps a finished job, for
// [Queue.Job] to answer with its outcome, for at least FinishedJobTTL
// after it finished, and drops it after that (at its next change). A
// store whose finished jobs live in memory or in a journal (store/memory,
// store/jsonl) also keeps at most FinishedJobLimit of them, dropping the
// oldest first.
const (
	FinishedJobTTL   = 24 * time.Hour
	FinishedJobLimit = 1000
)

// Expired returns how many of the finished jobs done, in the order they
// finished (finished gives when), are past their retention: older than
// FinishedJobTTL, or beyond the FinishedJobLimit (or limit, when
// positive) newest. A store keeping finished jobs in memory drops them.
func Expired[J any](done []J, finished func(J) time.Time, limit int) int {
	if limit <= 0 {
		limit = FinishedJobLimit
	}
	cut := time.Now().Add(-FinishedJobTTL)
	n := 0
	for n < len(done) && (finished(done[n]).Before(cut) || len(done)-n > limit) {
		n++
	}
	return n
}

// Outcome is how a job ended, given to [Claim.Finish]. The zero Outcome
// is a job done.
type Outcome struct {
	// State is JobDone, JobFailed or JobCancelled; empty is JobDone, or
	// JobFailed when Error is set.
	State JobState `json:"state,omitempty"`
	// Error says why a failed (or cancelled) job ended so: a stable Code
	// for programs, a Message for people.
	Error *JobError `json:"error,omitempty"`
	// Reason is what the job's work ended with, opaque to the store (the
	// runtime puts a turn's end reason, or "suspended").
	Reason string `json:"reason,omitempty"`
	// Checkpoint is the signed checkpoint note the job's turn ended or
	// suspended with (its receipt), opaque to the store; empty when the
	// sessions are not signed.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// JobError is the error a job ended with.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Normalize returns o with its State filled in, or an error for a state a
// finished job cannot have.
func (o Outcome) Normalize() (Outcome, error) {
	switch {
	case o.State == "" && o.Error != nil:
		o.State = JobFailed
	case o.State == "":
		o.State = JobDone
	case !o.State.Finished():
		return o, fmt.Errorf("session: %q is not the state of a finished job", o.State)
	}
	return o, nil
}

// Job is a unit of work accepted into a session's queue: a turn to run,
// or a decision to record and act on. The store keeps its Kind and Input
// as they are; the runtime that enqueues and runs jobs gives them meaning.
type Job struct {
	// ID is assigned by Enqueue: unique in the store, and ordered as the
	// jobs were enqueued.
	ID      string
	Session string
	// Kind names what the job does ("turn", "decide").
	Kind string
	// Call, when set, is the tool call the job decides: Enqueue refuses
	// ([ErrDuplicateJob]) a job whose Session and Call are those of a job
	// queued, running or finished done, so two people deciding one call at
	// once have one decision queued, whatever the processes.
	Call string
	// Input is the job's request, JSON, opaque to the store.
	Input []byte
	// Enqueued is when Enqueue accepted it.
	Enqueued time.Time
	// Base is the session log's length when a worker first started the job
	// ([Claim.Start]), -1 until one has: a later claim of a job that was
	// started (its worker died, or handed it back) tells from the log past
	// Base how far it got.
	Base int64
	// Attempts counts the claims of the job, the current one included.
	Attempts int
	State    JobState
	// Worker names the worker of a running job (or the last one of a
	// finished job, when the store knows it).
	Worker string
	// Started is when a worker first started it ([Claim.Start]), zero
	// before; Finished when it ended, zero before.
	Started, Finished time.Time
	// Outcome is how a finished job ended (State repeats it).
	Outcome Outcome
}

// Queue is implemented by stores that keep a durable queue of jobs per
// session, so that an accepted turn survives a restart and any worker
// sharing the store may run it (store/jsonl in one process,
// store/postgres across processes and machines). A session's jobs run one
// at a time, oldest first, each under the session's turn lease.
// [sessiontest.RunQueue] is its conformance suite.
type Queue interface {
	// Enqueue adds job to the queue of session job.Session (its ID, Base,
	// Attempts, State and Enqueued are set by the queue) and returns the
	// stored job and its position: how many unfinished jobs of the session
	// are ahead of it, a running one included. An unknown session is
	// [ErrNotFound].
	Enqueue(ctx context.Context, job Job) (Job, int, error)
	// Jobs returns the unfinished jobs of session id, oldest first (a
	// running one, if any, is the first).
	Jobs(ctx context.Context, id string) ([]Job, error)
	// Job returns the job with id, unfinished or finished (with its
	// outcome, while the queue keeps it: see [FinishedJobTTL]). An unknown
	// job, or one dropped since, is [ErrNotFound].
	Job(ctx context.Context, id string) (Job, error)
	// Claim waits until a job can run and returns it claimed by worker,
	// with its session's turn lease held by this store: the oldest
	// unfinished job of a session whose lease nobody else holds. A job
	// whose worker died is claimed again once that worker's lease is gone
	// (expired, or its file lock dropped with its process). Claim returns
	// ctx's error when ctx is done first.
	Claim(ctx context.Context, worker string) (Claim, error)
	// Cancel drops the queued jobs of session id (they finish cancelled)
	// and signals the claim running one, if any ([Claim.Cancelled]); it
	// returns how many jobs it dropped or signalled. An unknown session is
	// ErrNotFound.
	Cancel(ctx context.Context, id string) (int, error)
}

// Claim is a job claimed by a worker, with its session's lease held.
// Exactly one of Finish and Release ends it.
type Claim interface {
	// Job is the claimed job, Attempts and State updated by the claim.
	Job() Job
	// Start records base, the log's length as the job starts, unless a
	// previous claim of the job recorded one (see [Job.Base]).
	Start(ctx context.Context, base int64) error
	// Cancelled is closed when the session's queue is cancelled while the
	// job runs.
	Cancelled() <-chan struct{}
	// Finish ends the job with outcome (see [Outcome]: the zero one is
	// done) and releases the lease; the queue keeps the finished job for a
	// while ([FinishedJobTTL]) so that [Queue.Job] can tell how it ended.
	Finish(ctx context.Context, outcome Outcome) error
	// Release releases the lease and hands the job back, queued, for
	// another claim (a worker draining before the job started).
	Release(ctx context.Context) error
}
