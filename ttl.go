package vigil

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil/session"
)

// TTLDecider is the by of the denial a worker gives a call that waited
// longer than its [WorkOptions].ApprovalTTL.
const TTLDecider = "approval-ttl"

// ttlWatch denies, through the queue, the calls that wait for a decision
// longer than ttl: a call's wait is measured from its approval/request's
// time in the log, so every worker sharing a store computes the same
// deadline, and the queue's one-decision-per-call rule makes the denial
// of several workers one. It watches the sessions it is told of (see
// [Runtime.Work]) with one timer each.
type ttlWatch struct {
	r   *Runtime
	ttl time.Duration
	log hclog.Logger
	ctx context.Context

	mu     sync.Mutex
	timers map[string]*time.Timer
}

func newTTLWatch(ctx context.Context, r *Runtime, ttl time.Duration) *ttlWatch {
	return &ttlWatch{r: r, ttl: ttl, log: r.log.Named("approval-ttl"), ctx: ctx, timers: map[string]*time.Timer{}}
}

// scan looks at every stored session once. It reads each session's log:
// a worker pays it once, as it starts.
func (w *ttlWatch) scan() {
	infos, err := w.r.Sessions(w.ctx)
	if err != nil && len(infos) == 0 {
		w.log.Warn("listing the sessions failed; only the sessions this worker suspends are watched", "error", err)
	}
	for _, i := range infos {
		if w.ctx.Err() != nil {
			return
		}
		w.check(i.ID)
	}
}

// check denies session id's calls whose wait is over, and sets a timer
// for the soonest of the others.
func (w *ttlWatch) check(id string) {
	if w.ctx.Err() != nil {
		return
	}
	tail, err := w.r.tail(w.ctx, id)
	if err != nil {
		w.log.Debug("reading a session failed", "session", id, "error", err)
		return
	}
	susp := session.Suspended(tail.Records)
	if susp == nil {
		return
	}
	var next time.Duration
	for _, c := range susp.Undecided() {
		req, ok := tail.At(c.RequestSeq)
		if !ok {
			continue
		}
		left := w.ttl - time.Since(req.Time())
		if left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		d := Decision{Allow: false, By: TTLDecider, Reason: fmt.Sprintf("no decision within %s (the approval TTL)", w.ttl)}
		_, _, err := w.r.QueueDecision(w.ctx, id, c.Call.ID, d)
		switch {
		case err == nil:
			w.log.Info("denying a call that waited too long", "session", id, "call", c.Call.ID)
		case errors.Is(err, session.ErrDuplicateJob), errors.Is(err, session.ErrAlreadyDecided),
			errors.Is(err, session.ErrNotPending), errors.Is(err, session.ErrNotSuspended):
			// Someone decided it meanwhile.
		default:
			w.log.Warn("queueing the denial of a call that waited too long failed", "session", id, "call", c.Call.ID, "error", err)
		}
	}
	if next > 0 {
		w.after(id, next)
	}
}

// after checks session id again after d (a later timer replaces it).
func (w *ttlWatch) after(id string, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.timers[id]; t != nil {
		t.Stop()
	}
	w.timers[id] = time.AfterFunc(d, func() {
		w.mu.Lock()
		delete(w.timers, id)
		w.mu.Unlock()
		w.check(id)
	})
}

// stop stops the timers.
func (w *ttlWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, t := range w.timers {
		t.Stop()
		delete(w.timers, id)
	}
}
