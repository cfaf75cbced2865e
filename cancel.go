package vigil

import (
	"context"
	"errors"

	"github.com/vigil-run/vigil/session"
)

// Cancellation is what [Runtime.CancelSession] did.
type Cancellation struct {
	// Cancelled counts the jobs dropped (queued) or signalled (running).
	Cancelled int
	// Abandon is the job that abandons a suspended turn (zero when the
	// session waited for nothing), and Denied the calls it denies.
	Abandon session.Job
	Denied  []string
}

// CancelSession stops session id's work, for whoever asks (by): its
// queued jobs are dropped, its running one cancelled (its turn ends
// aborted), and a turn suspended on approvals abandoned by a queued job
// ([Runtime.QueueAbandon]) that denies its undecided calls with reason
// cancelled and ends it aborted, by the path every decision takes. The
// API's cancel and a protocol's are this one.
func (r *Runtime) CancelSession(ctx context.Context, id, by string) (Cancellation, error) {
	q, err := r.Queue()
	if err != nil {
		return Cancellation{}, err
	}
	n, err := q.Cancel(ctx, id)
	if err != nil {
		return Cancellation{}, err
	}
	out := Cancellation{Cancelled: n}
	job, denied, err := r.QueueAbandon(ctx, id, by)
	switch {
	case errors.Is(err, session.ErrNotSuspended):
	case err != nil:
		return out, err
	default:
		out.Abandon, out.Denied = job, denied
	}
	return out, nil
}
