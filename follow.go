package vigil

import (
	"context"
	"iter"
	"time"

	"github.com/vigil-run/vigil/session"
)

// followPoll is how often a store that cannot follow a log is read
// again by [Runtime.Follow].
const followPoll = 250 * time.Millisecond

// Follow yields session id's records from seq from on, those stored now
// and then each one as it is appended, until ctx is done or at the first
// error: through the store's Follow when it has one (store/jsonl,
// store/postgres: only durable records, appended by any process), else by
// reading the log again every quarter second.
func (r *Runtime) Follow(ctx context.Context, id string, from int64) iter.Seq2[session.Record, error] {
	mgr, err := r.Manager()
	if err != nil {
		return func(yield func(session.Record, error) bool) { yield(session.Record{}, err) }
	}
	if f, ok := mgr.Store().(session.Follower); ok {
		return f.Follow(ctx, id, from)
	}
	store := mgr.Store()
	return func(yield func(session.Record, error) bool) {
		t := time.NewTicker(followPoll)
		defer t.Stop()
		for {
			log, err := store.Load(ctx, id)
			if err != nil {
				if ctx.Err() == nil {
					yield(session.Record{}, err)
				}
				return
			}
			for _, rec := range log.Records[min(from, int64(len(log.Records))):] {
				if !yield(rec, nil) {
					return
				}
				from = rec.Seq() + 1
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
}
