package vigil

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// Decision is a person's (or a program's) answer to a tool call that
// waits for approval: allow or deny it, who decided and, for a denial,
// the reason the model is shown.
type Decision = agentloop.Decision

// Pending returns what session id waits for: its suspended step's calls
// with their requests and any decisions given, or nil when the session is
// not suspended. It reads the end of the stored log (its last turn).
func (r *Runtime) Pending(ctx context.Context, id string) (*session.Suspension, error) {
	tail, err := r.tail(ctx, id)
	if err != nil {
		return nil, err
	}
	return session.Suspended(tail.Records), nil
}

// tail reads the end of session id's stored log: its last turn, which
// holds whatever the session waits for.
func (r *Runtime) tail(ctx context.Context, id string) (*session.Tail, error) {
	mgr, err := r.Manager()
	if err != nil {
		return nil, err
	}
	return session.LoadTail(ctx, mgr.Store(), id)
}

// DecideOptions describe one decision for [Runtime.Decide].
type DecideOptions struct {
	// Session is the suspended session's id, Call the id of the tool call
	// decided (as [Runtime.Pending] lists it).
	Session, Call string
	Decision
	// Wait makes a decision on a session whose lease another holds wait
	// for it (until ctx is done) instead of failing with [ErrBusy].
	Wait bool
	// OnChunk, when set, is called with every content chunk of the
	// resumed turn, as [TurnOptions].OnChunk.
	OnChunk func(agentloop.Chunk)
}

// Decide logs the decision for a call of a suspended session's step.
// When that was the last call waiting, the turn resumes here: the allowed
// calls run, the denied ones are answered APPROVAL_DENIED with the
// reason, and the turn goes on; Decide returns its result as
// [Runtime.Turn] would (a turn that asks again returns [ErrSuspended]).
// While other calls of the step still wait, the result is nil.
//
// It refuses, logging nothing, an unknown session ([ErrNotFound]) or call
// (session.ErrUnknownCall), a session that is not suspended
// (session.ErrNotSuspended), a call already decided
// (session.ErrAlreadyDecided, naming who decided, also once that decision
// resumed the step), a denial of scope session or a decision by
// session-rule (session.ErrInvalidDecision) and a session whose turn runs
// elsewhere ([ErrBusy]). The decision is taken under the session's lease,
// so two processes deciding one call log one decision. An allow of scope
// session ("always for this session") also decides the later calls it
// covers (approval.Cover).
func (r *Runtime) Decide(ctx context.Context, o DecideOptions) (*Result, error) {
	if o.Session == "" {
		return nil, fmt.Errorf("decide: %w: no session id", ErrNotFound)
	}
	var res *Result
	err := r.underLease(ctx, o.Session, o.Wait, "", func(sess *live.Session) error {
		agent, err := r.agentOf(ctx, sess)
		if err != nil {
			return err
		}
		res, err = decideAndResume(ctx, agent, sess, jobInput{Call: o.Call, Decide: &o.Decision}, chunkOption(o.OnChunk)...)
		return err
	})
	return res, err
}

// ReasonCancelled is the reason of the denials that abandon a suspended
// turn ([Runtime.Abandon], [Runtime.QueueAbandon]).
const ReasonCancelled = "cancelled"

// ErrAbandoned is the cause of the abort of a suspended turn abandoned
// by [Runtime.Abandon] or [Runtime.QueueAbandon]: the error of its result.
var ErrAbandoned = errors.New("vigil: the suspended turn was cancelled")

// Abandon gives up the suspended turn of session id: each call still
// waiting for a decision is denied by by with reason "cancelled" (logged
// as any decision is), and the turn resumes cut short, so it ends
// aborted (the calls allowed already do not run). It returns the turn's
// result and an error matching [ErrAbandoned]; a session that is not
// suspended is session.ErrNotSuspended.
func (r *Runtime) Abandon(ctx context.Context, id, by string) (*Result, error) {
	if id == "" {
		return nil, fmt.Errorf("abandon: %w: no session id", ErrNotFound)
	}
	var res *Result
	err := r.underLease(ctx, id, false, "", func(sess *live.Session) error {
		agent, err := r.agentOf(ctx, sess)
		if err != nil {
			return err
		}
		res, err = decideAndResume(ctx, agent, sess, abandonInput(by))
		return err
	})
	return res, err
}

func abandonInput(by string) jobInput {
	return jobInput{Abandon: true, Decide: &Decision{Allow: false, By: by, Reason: ReasonCancelled}}
}

// decideAndResume is the one way a decision is acted on, whoever takes it
// (Decide here, a queued decision in a worker, an abandon): it logs the
// decision of in on its call of sess's suspended step — for an abandon,
// a denial of every call still undecided — and, once no call of the step
// waits, resumes the turn; an abandoned turn resumes cut short, so it
// ends aborted with [ErrAbandoned]. While other calls wait, the result
// is nil.
func decideAndResume(ctx context.Context, agent *agentloop.Agent, sess *live.Session, in jobInput, opts ...agentloop.RunOption) (*Result, error) {
	if in.Decide == nil {
		return nil, errors.New("vigil: a decision job without a decision")
	}
	calls := []string{in.Call}
	if in.Abandon {
		s := session.Suspended(sess.Records())
		if s == nil {
			return nil, fmt.Errorf("abandon %s: %w", sess.ID(), session.ErrNotSuspended)
		}
		calls = calls[:0]
		for _, c := range s.Undecided() {
			calls = append(calls, c.Call.ID)
		}
	}
	for _, call := range calls {
		if _, err := agentloop.Decide(ctx, sess, call, *in.Decide); err != nil {
			return nil, err
		}
	}
	if s := session.Suspended(sess.Records()); s == nil || !s.Ready() {
		return nil, nil
	}
	if in.Abandon {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		cancel(ErrAbandoned)
	}
	return agent.Resume(ctx, sess, opts...)
}

// Resume continues the suspended turn of session id whose calls are all
// decided but did not run: the process that gave the last decision ended
// before the step went on. The allowed calls run now; the turn goes on as
// after [Runtime.Decide]. A session not suspended is session.ErrNotSuspended,
// one with calls still undecided agentloop.ErrNotReady.
func (r *Runtime) Resume(ctx context.Context, id string, onChunk func(agentloop.Chunk)) (*Result, error) {
	if id == "" {
		return nil, fmt.Errorf("resume: %w: no session id", ErrNotFound)
	}
	var res *Result
	err := r.underLease(ctx, id, false, "", func(sess *live.Session) error {
		agent, err := r.agentOf(ctx, sess)
		if err != nil {
			return err
		}
		res, err = agent.Resume(ctx, sess, chunkOption(onChunk)...)
		return err
	})
	return res, err
}
