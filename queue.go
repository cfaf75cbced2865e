package vigil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/session"
)

// ErrNoQueue is returned when the composition's store keeps no turn queue
// (see [session.Queue]; store/jsonl and store/postgres do).
var ErrNoQueue = errors.New("vigil: the store keeps no turn queue")

// The kinds of the jobs this runtime queues and runs ([session.Job].Kind).
const (
	// JobTurn runs a turn with a prompt.
	JobTurn = "turn"
	// JobDecide logs a decision on a suspended session's call and, when
	// it was the last one waiting, resumes the turn.
	JobDecide = "decide"
)

// jobInput is the Input of a queued job, JSON.
type jobInput struct {
	Prompt string `json:"prompt,omitempty"`
	// By names who posted a turn (see [By]); a decision names its own.
	By     string    `json:"by,omitempty"`
	Call   string    `json:"call,omitempty"`
	Decide *Decision `json:"decision,omitempty"`
}

// Queue returns the composition store's turn queue, or [ErrNoQueue].
func (r *Runtime) Queue() (session.Queue, error) {
	mgr, err := r.Manager()
	if err != nil {
		return nil, err
	}
	q, ok := mgr.Store().(session.Queue)
	if !ok {
		return nil, fmt.Errorf("%w (%T)", ErrNoQueue, mgr.Store())
	}
	return q, nil
}

// QueueTurn queues a turn with prompt on session id, for a worker
// ([Runtime.Work], in this process or any other sharing the store) to
// run, and returns the job and its position: how many jobs of the session
// run before it. The job survives a restart: it is kept by the store.
// [By] names who posted it: the job's input and the turn's turn/start
// say so.
func (r *Runtime) QueueTurn(ctx context.Context, id, prompt string, opts ...SessionOption) (session.Job, int, error) {
	o, err := sessionOpts(opts, false)
	if err != nil {
		return session.Job{}, 0, err
	}
	return r.enqueue(ctx, id, JobTurn, jobInput{Prompt: prompt, By: o.by})
}

// QueueDecision queues a decision on call of suspended session id, as
// [Runtime.Decide] takes it, for a worker to log and act on. It checks
// now that the call waits for a decision, so that a decision that cannot
// be taken is refused with Decide's errors rather than queued.
func (r *Runtime) QueueDecision(ctx context.Context, id, call string, d Decision) (session.Job, int, error) {
	log, err := r.Session(ctx, id)
	if err != nil {
		return session.Job{}, 0, err
	}
	if _, err := session.CheckDecision(log.Records, call, session.ApprovalDecision{Allow: d.Allow, By: d.By, Reason: d.Reason, Scope: d.Scope}); err != nil {
		return session.Job{}, 0, err
	}
	return r.enqueue(ctx, id, JobDecide, jobInput{Call: call, Decide: &d})
}

func (r *Runtime) enqueue(ctx context.Context, id, kind string, in jobInput) (session.Job, int, error) {
	q, err := r.Queue()
	if err != nil {
		return session.Job{}, 0, err
	}
	data, err := json.Marshal(in)
	if err != nil {
		return session.Job{}, 0, err
	}
	return q.Enqueue(ctx, session.Job{Session: id, Kind: kind, Input: data})
}
