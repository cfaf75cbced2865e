package vigil

import (
	"context"
	"fmt"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// Reconciliation is the real outcome of a tool call whose outcome the log
// does not know (TOOL_OUTCOME_UNKNOWN: the process died while it ran), as
// a person or a program found it: the call returned Result, or, when
// Failed is set, it failed for that reason.
type Reconciliation struct {
	// Result is what the call returned, as the tool would have said it.
	Result string
	// Failed, when not empty, says the call failed and why: it is logged
	// as error TOOL_ERROR (session.CodeToolError) with this message.
	Failed string
	// By names who reconciled the call (the principal): logged, and shown
	// to the model.
	By string
	// Wait makes a reconcile of a session whose lease another holds wait
	// for it (until ctx is done) instead of failing with [ErrBusy].
	Wait bool
}

// record is the tool/reconcile data of o.
func (o Reconciliation) record() session.ToolReconcile {
	rec := session.ToolReconcile{By: o.By, Content: o.Result}
	if o.Failed != "" {
		rec.Content = ""
		rec.Error = &session.ToolResultError{Code: session.CodeToolError, Message: o.Failed}
	}
	return rec
}

// Reconcile logs the real outcome of call callID of session sessionID,
// whose only result is TOOL_OUTCOME_UNKNOWN, as a tool/reconcile record
// attributed to out.By: from then on the model is shown it (a user
// message at its place in the conversation), and the continuation does
// not retry the call. It is made durable before Reconcile returns.
//
// It refuses, logging nothing, an unknown session ([ErrNotFound]) or
// call (session.ErrUnknownCall), a call whose outcome is known
// (session.ErrOutcomeKnown), one reconciled already
// (session.ErrAlreadyReconciled, a *session.ReconciledError naming who),
// a session with an open turn, suspended or running (session.ErrOpenTurn),
// and one whose lease another holds ([ErrBusy], unless out.Wait). It is
// appended under the session's lease, so two reconcilers of one call log
// one reconcile: the second is told who won.
func (r *Runtime) Reconcile(ctx context.Context, sessionID, callID string, out Reconciliation) error {
	if sessionID == "" {
		return fmt.Errorf("reconcile: %w: no session id", ErrNotFound)
	}
	return r.underLease(ctx, sessionID, out.Wait, "", func(sess *live.Session) error {
		ev, err := session.CheckReconcile(sess.Records(), callID, out.record())
		if err != nil {
			return fmt.Errorf("reconcile %s of session %s: %w", callID, sessionID, err)
		}
		if _, err := sess.Append(ctx, ev); err != nil {
			return fmt.Errorf("reconcile %s of session %s: %w", callID, sessionID, err)
		}
		return sess.Flush(ctx)
	})
}

// Unknown returns the calls of session id whose outcome is unknown and
// not reconciled: what [Runtime.Reconcile] may settle.
func (r *Runtime) Unknown(ctx context.Context, id string) ([]session.UnknownCall, error) {
	mgr, err := r.Manager()
	if err != nil {
		return nil, err
	}
	log, err := mgr.Store().Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return session.Unknown(log.Records), nil
}
