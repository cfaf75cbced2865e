package vigil

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// ErrHasChildren: a session with child sessions (its sub-agents') is
// deleted only with them ([DeleteOptions].Tree), so that no child is left
// naming a parent that is gone. Forks are not children: they hold their
// own copy of what they inherit, and outlive the session they came from.
var ErrHasChildren = errors.New("vigil: the session has child sessions")

// DefaultDeleteGrace is how long a deletion waits, unless
// [DeleteOptions].Grace says otherwise, for a turn running on the
// session to end once its queue was cancelled.
const DefaultDeleteGrace = 10 * time.Second

// DeleteOptions configure [Runtime.DeleteSession].
type DeleteOptions struct {
	// Tree deletes the session's child sessions with it, recursively.
	Tree bool
	// By names who asks, for the process log.
	By string
	// Grace bounds the wait for a running turn (default
	// [DefaultDeleteGrace]); past it the session is deleted anyway, and
	// the turn's next write fails.
	Grace time.Duration
}

// DeleteSession removes session id from the store for good (see
// [session.Deleter]): its log, its queued, running and finished jobs,
// its lease; with o.Tree its child sessions too. It returns the ids
// deleted, children before their parents (a deletion cut short leaves no
// child without its parent).
//
// A turn running on a session is stopped first: the session's queue is
// cancelled (a worker's job ends aborted and finishes), then the deletion
// waits, up to o.Grace, for this process's turn on it and for its lease
// (another process's turn); past the grace the session is deleted
// under the turn, whose next write is refused. Each deletion is logged
// with o.By.
func (r *Runtime) DeleteSession(ctx context.Context, id string, o DeleteOptions) ([]string, error) {
	if !session.ValidID(id) {
		return nil, session.InvalidID(id)
	}
	mgr, err := r.Manager()
	if err != nil {
		return nil, err
	}
	st := mgr.Store()
	del, ok := st.(session.Deleter)
	if !ok {
		return nil, fmt.Errorf("delete %s: the store (%T) cannot delete sessions", id, st)
	}
	tree, err := session.LoadTree(ctx, st, id)
	if err != nil {
		return nil, err
	}
	if !o.Tree && len(tree.Children) > 0 {
		return nil, fmt.Errorf("%w: %s has %d (delete them with it: tree)", ErrHasChildren, id, len(tree.Children))
	}
	var order []session.Info // parents first
	tree.Walk(func(n *session.Tree, _ int) { order = append(order, n.Info) })
	if q, ok := st.(session.Queue); ok {
		for _, info := range order {
			// Stops a worker's turn on it, here or elsewhere; nothing new
			// is claimed.
			if _, err := q.Cancel(ctx, info.ID); err != nil && !errors.Is(err, session.ErrNotFound) {
				return nil, fmt.Errorf("delete %s: %w", info.ID, err)
			}
		}
	}
	grace := o.Grace
	if grace <= 0 {
		grace = DefaultDeleteGrace
	}
	wctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	var deleted []string
	for _, info := range slices.Backward(order) {
		err := r.deleteOne(ctx, wctx, del, info, o.By)
		if errors.Is(err, session.ErrNotFound) && info.ID != id {
			continue // a child deleted meanwhile
		}
		if err != nil {
			return deleted, err
		}
		deleted = append(deleted, info.ID)
	}
	return deleted, nil
}

// deleteOne deletes session id once its turn ended, or wctx (the grace)
// is done.
func (r *Runtime) deleteOne(ctx, wctx context.Context, del session.Deleter, info session.Info, by string) error {
	id := info.ID
	log := r.log.With("session", id, "tenant", info.TenantOf(), "by", by)
	// This process's turn on it (Runtime.Turn, a job of Runtime.Work).
	if release, err := r.claim(wctx, id, true); err == nil {
		defer release()
	} else {
		log.Warn("deleting a session while a turn of this process runs on it", "error", err)
	}
	r.awaitJobs(wctx, id)
	// Another process's turn: its lease.
	if l, ok := del.(session.Leaser); ok {
		release, err := l.Lease(wctx, id, true)
		switch {
		case err == nil:
			defer release()
		case errors.Is(err, session.ErrNotFound):
			return err
		default:
			log.Warn("deleting a session whose lease another holds", "error", err)
		}
	}
	// The hot-session cache (issue 30 items 1-2) drops id here.
	if err := del.Delete(ctx, id); err != nil {
		return err
	}
	// A warning, so that the default level (warn) keeps every deletion
	// in the process log: it cannot be undone.
	log.Warn("deleted a session")
	return nil
}

// deletePoll is how often a deletion looks whether a cancelled job ended.
const deletePoll = 50 * time.Millisecond

// awaitJobs waits until session id has no unfinished job (its queue was
// cancelled: a running one is ending), or ctx is done.
func (r *Runtime) awaitJobs(ctx context.Context, id string) {
	q, err := r.Queue()
	if err != nil {
		return
	}
	t := time.NewTicker(deletePoll)
	defer t.Stop()
	for {
		jobs, err := q.Jobs(ctx, id)
		if err != nil || len(jobs) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Retention returns the store's retention (the store plugin's retention
// config); the zero Retention, which keeps every session, when it has
// none.
func (r *Runtime) Retention() session.Retention {
	ret, err := service(r, live.RetentionService)
	if err != nil {
		return session.Retention{}
	}
	return ret
}

// Prune deletes the sessions past retention ret at now (see
// [session.PruneCandidates]: a session with unfinished jobs is kept),
// each as [Runtime.DeleteSession] deletes one, by names who asks. A
// parent waits for its children: it is deleted once none is left, so a
// child still in use keeps its parent. It returns the ids deleted; the
// error joins what could not be deleted or read.
func (r *Runtime) Prune(ctx context.Context, ret session.Retention, now time.Time, by string) ([]string, error) {
	mgr, err := r.Manager()
	if err != nil {
		return nil, err
	}
	ids, err := session.PruneCandidates(ctx, mgr.Store(), ret, now)
	errs := []error{err}
	var deleted []string
	for len(ids) > 0 {
		var waiting []string
		for _, id := range ids {
			_, err := r.DeleteSession(ctx, id, DeleteOptions{By: by})
			switch {
			case errors.Is(err, ErrHasChildren):
				waiting = append(waiting, id)
			case errors.Is(err, session.ErrNotFound):
			case err != nil:
				errs = append(errs, err)
			default:
				deleted = append(deleted, id)
			}
		}
		if len(waiting) == len(ids) {
			break // children outlive their parents: kept until they go
		}
		ids = waiting
	}
	return deleted, errors.Join(errs...)
}
