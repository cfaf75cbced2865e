package server

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/session"
)

// depthTimeout bounds the store query behind one reading of the queue
// gauge: a scrape must not hang on a database that does not answer.
const depthTimeout = 5 * time.Second

// WatchQueue adds the queue-depth gauge, vigil.queue.jobs: the unfinished
// jobs of rt's store's queue (every process's, the store is shared) by
// kind and state, read from the store at each collection. A store that
// cannot count its jobs, or fails to, reports nothing for that reading;
// the failure is logged.
func (m *Metrics) WatchQueue(rt *vigil.Runtime, log hclog.Logger) error {
	if m == nil {
		return nil
	}
	_, err := m.meter.Int64ObservableGauge("vigil.queue.jobs", metric.WithUnit("{job}"),
		metric.WithDescription("Unfinished jobs in the store's queue, by kind and state (queued, running)."),
		metric.WithInt64Callback(func(ctx context.Context, o metric.Int64Observer) error {
			ctx, cancel := context.WithTimeout(ctx, depthTimeout)
			defer cancel()
			counts, err := rt.QueueDepth(ctx)
			if err != nil {
				log.Warn("counting the queued jobs failed", "error", err)
				return nil
			}
			// The runtime's kinds are always reported, 0 when none wait,
			// so that an emptied queue reads 0, not a series gone stale.
			n := map[[2]string]int{}
			for _, kind := range []string{vigil.JobTurn, vigil.JobDecide} {
				for _, state := range []session.JobState{session.JobQueued, session.JobRunning} {
					n[[2]string{kind, string(state)}] = 0
				}
			}
			for _, c := range counts {
				n[[2]string{c.Kind, string(c.State)}] += c.N
			}
			for k, v := range n {
				o.Observe(int64(v), metric.WithAttributes(
					attribute.String("vigil.job.kind", k[0]), attribute.String("vigil.job.state", k[1])))
			}
			return nil
		}))
	return err
}
