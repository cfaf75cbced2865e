package vigil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/approval"
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
	By string `json:"by,omitempty"`
	// Agent is the entry id of the agent that runs the job (see
	// [RunAgent]); "" is the session's.
	Agent  string    `json:"agent,omitempty"`
	Call   string    `json:"call,omitempty"`
	Decide *Decision `json:"decision,omitempty"`
	// Abandon: deny every call still undecided with Decide and end the
	// suspended turn aborted (see [Runtime.Abandon]).
	Abandon bool `json:"abandon,omitempty"`
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
	if o.agent != "" {
		if _, err := r.AgentNamed(o.agent); err != nil {
			return session.Job{}, 0, err
		}
	}
	return r.enqueue(ctx, id, JobTurn, "", jobInput{Prompt: prompt, By: o.by, Agent: o.agent})
}

// QueueDecision queues a decision on call of suspended session id, as
// [Runtime.Decide] takes it, for a worker to log and act on. It checks
// now that the call waits for a decision, so that a decision that cannot
// be taken is refused with Decide's errors rather than queued; and the
// queue refuses a second decision on the call while one is queued,
// running or done (session.ErrDuplicateJob), so that of two people
// deciding at once, whatever the processes, one is told it lost.
// [RunAgent] names the agent that resumes the turn, as it ran it.
func (r *Runtime) QueueDecision(ctx context.Context, id, call string, d Decision, opts ...SessionOption) (session.Job, int, error) {
	o, err := sessionOpts(opts, false)
	if err != nil {
		return session.Job{}, 0, err
	}
	if err := r.checkDecision(ctx, id, call, d); err != nil {
		return session.Job{}, 0, err
	}
	if err := r.abandoning(ctx, id); err != nil {
		return session.Job{}, 0, err
	}
	return r.enqueue(ctx, id, JobDecide, call, jobInput{Call: call, Decide: &d, Agent: o.agent})
}

// checkDecision checks decision d on call of session id against the end
// of its log, where a pending call is; only a call that is not there (an
// earlier turn's, or none) costs a read of the whole log, which says what
// became of it.
func (r *Runtime) checkDecision(ctx context.Context, id, call string, d Decision) error {
	tail, err := r.tail(ctx, id)
	if err != nil {
		return err
	}
	dec := session.ApprovalDecision{Allow: d.Allow, By: d.By, Reason: d.Reason, Scope: d.Scope}
	_, err = approval.CheckDecision(tail.Records, call, dec)
	if !errors.Is(err, session.ErrUnknownCall) || int64(len(tail.Records)) == tail.Next {
		return err
	}
	log, err := r.Session(ctx, id)
	if err != nil {
		return err
	}
	_, err = approval.CheckDecision(log.Records, call, dec)
	return err
}

// QueueAbandon queues the abandon of session id's suspended turn, as
// [Runtime.Abandon] does it, for a worker: it returns the job and the
// calls it will deny (those undecided now). A session not suspended is
// session.ErrNotSuspended.
func (r *Runtime) QueueAbandon(ctx context.Context, id, by string) (session.Job, []string, error) {
	pending, err := r.Pending(ctx, id)
	if err != nil {
		return session.Job{}, nil, err
	}
	if pending == nil {
		return session.Job{}, nil, fmt.Errorf("abandon %s: %w", id, session.ErrNotSuspended)
	}
	var calls []string
	for _, c := range pending.Undecided() {
		calls = append(calls, c.Call.ID)
	}
	job, _, err := r.enqueue(ctx, id, JobDecide, "", abandonInput(by))
	return job, calls, err
}

// JobBy returns who queued job, as its input says: who posted a turn,
// the decider of a decision ("" when the input names no one).
func JobBy(job session.Job) string {
	var in jobInput
	switch {
	case json.Unmarshal(job.Input, &in) != nil:
		return ""
	case in.Decide != nil:
		return in.Decide.By
	}
	return in.By
}

// JobAgent returns the entry id of the agent job runs with, as its input
// says ([RunAgent]); "" is the session's.
func JobAgent(job session.Job) string {
	var in jobInput
	if json.Unmarshal(job.Input, &in) != nil {
		return ""
	}
	return in.Agent
}

// abandoning refuses a decision on session id while an abandon of its
// turn is queued or running: that job denies every call still waiting.
// (A decision queued in the instant before the abandon is, when its turn
// comes, refused by the log and ends failed, code decided.)
func (r *Runtime) abandoning(ctx context.Context, id string) error {
	q, err := r.Queue()
	if err != nil {
		return err
	}
	jobs, err := q.Jobs(ctx, id)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		var in jobInput
		if j.Kind == JobDecide && json.Unmarshal(j.Input, &in) == nil && in.Abandon {
			return fmt.Errorf("session %s: its suspended turn is being cancelled (job %s): %w", id, j.ID, session.ErrDuplicateJob)
		}
	}
	return nil
}

func (r *Runtime) enqueue(ctx context.Context, id, kind, call string, in jobInput) (session.Job, int, error) {
	q, err := r.Queue()
	if err != nil {
		return session.Job{}, 0, err
	}
	data, err := json.Marshal(in)
	if err != nil {
		return session.Job{}, 0, err
	}
	return q.Enqueue(ctx, session.Job{Session: id, Kind: kind, Call: call, Input: data})
}
