package vigil

import (
	"context"
	"fmt"

	"github.com/vigil-run/vigil/session"
)

// Ready returns nil when the composition's store answers now, for a
// readiness probe: a store that can tell ([session.Pinger]) is asked
// (store/postgres makes a round trip to the database), any other is
// taken to answer once the composition has one.
func (r *Runtime) Ready(ctx context.Context) error {
	mgr, err := r.Manager()
	if err != nil {
		return err
	}
	if p, ok := mgr.Store().(session.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// QueueDepth counts the unfinished jobs of the store's queue by kind and
// state ([session.Depther]); a queue that cannot count them is an error
// wrapping [ErrNoQueue].
func (r *Runtime) QueueDepth(ctx context.Context) ([]session.JobCount, error) {
	q, err := r.Queue()
	if err != nil {
		return nil, err
	}
	d, ok := q.(session.Depther)
	if !ok {
		return nil, fmt.Errorf("%w: %T does not count its jobs", ErrNoQueue, q)
	}
	return d.Depth(ctx)
}
