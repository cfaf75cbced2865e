package agentloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// ErrNothingToContinue is matched by the refusal of [Agent.Continue] on a
// session whose last turn did not end interrupted, aborted or budget (or
// that has no turn):
// there is no cut-short turn to carry on.
var ErrNothingToContinue = errors.New("agentloop: nothing to continue")

// NothingToContinueError is that refusal, with what the session's last
// turn is. It matches [ErrNothingToContinue].
type NothingToContinueError struct {
	Session string
	// Turn is the session's last turn (0: it has none) and Reason how it
	// ended.
	Turn   int
	Reason string
}

func (e *NothingToContinueError) Error() string {
	if e.Turn == 0 {
		return fmt.Sprintf("session %s has no turn to continue", e.Session)
	}
	return fmt.Sprintf("nothing to continue in session %s: its last turn, %d, ended %s, not %s",
		e.Session, e.Turn, e.Reason, session.ContinuableReasons)
}

func (e *NothingToContinueError) Is(target error) bool { return target == ErrNothingToContinue }

// Continue runs a continuation turn on sess: when the session's last turn
// ended interrupted (a crashed process's turn, closed by repair when the
// session was opened), it logs turn/start {"continues": N} for that turn
// N and no user message, then steps as [Agent.Run] does: the model is
// asked again from the fold, which shows the interrupted calls'
// TOOL_OUTCOME_UNKNOWN / TOOL_NOT_STARTED results. Before its first step
// it runs again, with the same idempotency key, each call whose outcome
// is unknown and whose tool declared itself idempotent (see
// [ToolInvocation.Retry]), logging tool/retry before and tool/reconcile
// after; the others stay unknown. A turn a limit ended
// (reason budget, before a step's request) is continued the same way:
// the model is asked for the answer it was refused; and one that was
// cancelled (reason aborted: Ctrl-C, a cancelled job), whose calls were
// answered when it stopped. A session with an open
// turn is refused as Run refuses it; one whose last turn ended any other
// way with a [*NothingToContinueError].
func (a *Agent) Continue(ctx context.Context, sess *live.Session, opts ...RunOption) (*TurnResult, error) {
	return a.withTurn(ctx, sess, opts, func(ctx context.Context, t *turn) (*TurnResult, error) {
		return t.continueTurn(ctx)
	})
}

func (t *turn) continueTurn(ctx context.Context) (*TurnResult, error) {
	tools, err := t.start(ctx, continuable)
	if err != nil {
		return nil, err
	}
	last := t.n - 1
	ran, err := t.retryUnknown(ctx, last, tools)
	if err != nil {
		return t.finish(failReason(err), err)
	}
	if ran && ctx.Err() != nil {
		return t.finish(session.ReasonAborted, context.Cause(ctx))
	}
	return t.steps(ctx, 1)
}

// continuable refuses a session whose last turn cannot be continued
// (see session.Continuable).
func continuable(sess *live.Session) error {
	turn, reason, err := LastTurn(sess)
	switch {
	case err != nil:
		return err
	case turn > 0 && reason == "":
		// An open turn: the caller refused it already.
		return fmt.Errorf("agentloop: turn %d of session %s: %w", turn, sess.ID(), session.ErrOpenTurn)
	case turn > 0 && session.Continuable(reason):
		return nil
	}
	return &NothingToContinueError{Session: sess.ID(), Turn: turn, Reason: reason}
}

// LastTurn returns sess's last turn and the reason it ended with, reading
// the log from its end: reason is "" while that turn is open, and turn is
// 0 when the session has none.
func LastTurn(sess *live.Session) (turn int, reason string, err error) {
	for r := range sess.Backward() {
		switch r.Type() {
		case session.TypeTurnEnd:
			end, err := session.DecodeData[session.TurnEnd](r)
			if err != nil {
				return 0, "", fmt.Errorf("agentloop: turn/end at seq %d: %w", r.Seq(), err)
			}
			return r.Turn(), end.Reason, nil
		case session.TypeTurnStart:
			return r.Turn(), "", nil
		}
	}
	return 0, "", nil
}
