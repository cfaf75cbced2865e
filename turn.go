package vigil

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session/live"
)

// TurnOptions describe one turn for [Runtime.Turn].
type TurnOptions struct {
	// Session is the id of the session the turn continues; "" starts a
	// new session.
	Session string
	// Prompt is the user message.
	Prompt string
	// Continue runs a continuation of the session's last turn instead of
	// a new one: that turn ended interrupted (its process died mid-turn,
	// and opening the session repaired it) or budget (a limit refused its
	// next step), and the model is asked again
	// from the log, with no new user message. Prompt must be empty and
	// Session set; a session with nothing to continue is refused with
	// [ErrNothingToContinue].
	Continue bool
	// Wait makes a turn on a busy session wait for the running turn to
	// end (until ctx is done) instead of failing with [ErrBusy].
	Wait bool
	// OnStart, when set, is called with the session's id once the
	// session is open for the turn, before the model is called.
	OnStart func(session string)
	// Agent is the entry id of the agent that runs the turn, when the
	// composition has several (see [Runtime.AgentNamed]); "" is the
	// composition's entry point.
	Agent string
	// By names who asks for the turn: it is logged on the turn's
	// turn/start and, for a new session, in its header as its creator.
	By string
	// OnChunk, when set, is called with every content chunk of the turn,
	// in order, after it was logged; on the turn's goroutine, so it
	// should return quickly.
	OnChunk func(agentloop.Chunk)
}

// Result is the outcome of a turn: its session, number, end reason
// (session.ReasonCompleted, ReasonMaxSteps, ReasonAborted, ReasonError,
// ReasonBlocked, ReasonBudget), steps, the content of its last assistant
// message and the token usage.
type Result = agentloop.TurnResult

// Turn runs one turn and returns its result. The session is opened under
// its lease for the turn and closed (flushed) after it. The result is
// nil only when the turn never started (the session is busy or not
// found, the composition has no agent or store); a turn that ended
// aborted or with an error returns its result and the cause (ctx's error
// for aborted). A turn that completed or hit the step limit returns a nil
// error.
func (r *Runtime) Turn(ctx context.Context, t TurnOptions) (*Result, error) {
	if t.Continue {
		switch {
		case t.Prompt != "":
			return nil, errors.New("vigil: a continuation takes no prompt")
		case t.Session == "":
			return nil, fmt.Errorf("a continuation needs a session: %w", ErrNothingToContinue)
		}
	}
	agent, err := r.AgentNamed(t.Agent)
	if err != nil {
		return nil, err
	}
	var res *Result
	err = r.underLease(ctx, t.Session, t.Wait, t.By, func(sess *live.Session) error {
		if t.OnStart != nil {
			t.OnStart(sess.ID())
		}
		opts := append(chunkOption(t.OnChunk), agentloop.By(t.By))
		var err error
		if t.Continue {
			res, err = agent.Continue(ctx, sess, opts...)
		} else {
			res, err = agent.Run(ctx, sess, t.Prompt, opts...)
		}
		return err
	})
	return res, err
}

func chunkOption(onChunk func(agentloop.Chunk)) []agentloop.RunOption {
	if onChunk == nil {
		return nil
	}
	return []agentloop.RunOption{agentloop.OnChunk(onChunk)}
}

// underLease runs fn on session id opened under its lease, and claimed in
// this runtime, then flushes and closes it. With id "" it runs fn on a new
// session of the default tenant made by by.
func (r *Runtime) underLease(ctx context.Context, id string, wait bool, by string, fn func(*live.Session) error) error {
	mgr, err := r.Manager()
	if err != nil {
		return err
	}
	if id != "" {
		release, err := r.claim(ctx, id, wait)
		if err != nil {
			return err
		}
		defer release()
	}
	var sess *live.Session
	var done func(context.Context) error
	if id == "" {
		sess, done, err = live.CreateLeased(ctx, mgr, "", by)
	} else {
		sess, done, err = live.OpenLeased(ctx, mgr, id, wait)
	}
	if err != nil {
		return err
	}
	if id == "" {
		// Nobody else knows the new id yet: the claim cannot be refused.
		release, _ := r.claim(ctx, sess.ID(), false)
		defer release()
	}
	err = fn(sess)
	if derr := done(context.WithoutCancel(ctx)); derr != nil && err == nil {
		err = derr
	}
	return err
}

// claim marks session id as running a turn in this runtime until release
// is called; a turn on it already running here is [ErrBusy], or, with
// wait, is waited for. Without it a second turn here would reopen, and so
// close, the session under the first (the store's lease is per process,
// not per turn).
func (r *Runtime) claim(ctx context.Context, id string, wait bool) (release func(), err error) {
	for {
		r.mu.Lock()
		ch, busy := r.running[id]
		if !busy {
			ch = make(chan struct{})
			r.running[id] = ch
			r.mu.Unlock()
			return func() {
				r.mu.Lock()
				delete(r.running, id)
				r.mu.Unlock()
				close(ch)
			}, nil
		}
		r.mu.Unlock()
		if !wait {
			return nil, fmt.Errorf("%w (a turn is running on session %s in this process)", ErrBusy, id)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Run is [Runtime.Turn] as an iterator: it runs a turn with prompt on
// session id ("" for a new one) and yields its content chunks as they
// stream, then the turn's error, if any, as the last pair. Ending the
// loop early aborts the turn (it ends aborted in the log). For the
// result (a new session's id, the usage), use Turn with OnChunk.
func (r *Runtime) Run(ctx context.Context, id, prompt string) iter.Seq2[agentloop.Chunk, error] {
	return func(yield func(agentloop.Chunk, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		_, err := r.Turn(ctx, TurnOptions{Session: id, Prompt: prompt, OnChunk: func(c agentloop.Chunk) {
			if stopped {
				return
			}
			if !yield(c, nil) {
				stopped = true
				cancel()
			}
		}})
		if err != nil && !stopped {
			yield(agentloop.Chunk{}, err)
		}
	}
}
