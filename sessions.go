package vigil

import (
	"context"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// NewSession creates an empty session in the composition's store and
// returns its id, for a turn (or [Runtime.Run]) to continue. [Tenant]
// and [By] name its owner in its header.
func (r *Runtime) NewSession(ctx context.Context, opts ...SessionOption) (string, error) {
	o, err := sessionOpts(opts, true)
	if err != nil {
		return "", err
	}
	mgr, err := r.Manager()
	if err != nil {
		return "", err
	}
	sess, done, err := live.CreateLeased(ctx, mgr, o.tenant, o.by)
	if err != nil {
		return "", err
	}
	return sess.ID(), done(context.WithoutCancel(ctx))
}

// Sessions lists the headers of the stored sessions. When some stored
// logs cannot be read, the others are returned with a
// *session.ListError naming those.
func (r *Runtime) Sessions(ctx context.Context) ([]session.Info, error) {
	mgr, err := r.Manager()
	if err != nil {
		return nil, err
	}
	return mgr.Store().List(ctx)
}

// SessionInfo reads the header of stored session id, without its
// records when the store can (session.InfoReader).
func (r *Runtime) SessionInfo(ctx context.Context, id string) (session.Info, error) {
	mgr, err := r.Manager()
	if err != nil {
		return session.Info{}, err
	}
	return session.ReadInfo(ctx, mgr.Store(), id)
}

// Session loads the stored log of session id: its header and records
// (session.DeriveMessages folds them into the conversation).
func (r *Runtime) Session(ctx context.Context, id string) (*session.Log, error) {
	mgr, err := r.Manager()
	if err != nil {
		return nil, err
	}
	return mgr.Store().Load(ctx, id)
}

// Fork creates a session that inherits the records of session id up to
// and including seq at (-1 for none of them) and returns its id; its
// header names id and at as its parent, and id's tenant: a fork belongs
// to its parent's tenant ([By] names who made it; a [Tenant] option is
// refused). A boundary inside an open turn is session.ErrOpenTurn.
func (r *Runtime) Fork(ctx context.Context, id string, at int64, opts ...SessionOption) (string, error) {
	o, err := sessionOpts(opts, false)
	if err != nil {
		return "", err
	}
	mgr, err := r.Manager()
	if err != nil {
		return "", err
	}
	s, err := mgr.ForkBy(ctx, id, at, o.by)
	if err != nil {
		return "", err
	}
	return s.ID(), s.Close(ctx)
}
