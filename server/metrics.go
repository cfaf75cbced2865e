package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// Metrics are the server's and its workers' measurements, recorded with
// OpenTelemetry and served at /metrics in the Prometheus text format by
// OpenTelemetry's Prometheus exporter. Other parts of Vigil add their
// instruments through [Metrics.Meter]. A nil *Metrics records nothing.
type Metrics struct {
	provider *sdkmetric.MeterProvider
	handler  http.Handler
	meter    metric.Meter

	requests metric.Float64Histogram
	enqueued metric.Int64Counter
	jobs     metric.Int64Counter
	jobTime  metric.Float64Histogram
}

// NewMetrics makes the meter provider and its Prometheus registry.
func NewMetrics() (*Metrics, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	m := &Metrics{provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithView(secondsView)),
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	m.meter = m.provider.Meter("github.com/vigil-run/vigil/server")
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var e error
	m.requests, e = m.meter.Float64Histogram("http.server.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP server requests."))
	add(e)
	m.enqueued, e = m.meter.Int64Counter("vigil.jobs.enqueued", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs (turns, decisions) accepted into a session's queue."))
	add(e)
	m.jobs, e = m.meter.Int64Counter("vigil.jobs.completed", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs a worker of this process ended, by kind and outcome."))
	add(e)
	m.jobTime, e = m.meter.Float64Histogram("vigil.job.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from a job's enqueue to its end (what a client waits), in a worker of this process."))
	add(e)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// Meter is the meter for further instruments served at the same /metrics.
func (m *Metrics) Meter() metric.Meter { return m.meter }

// Shutdown stops the meter provider.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.provider.Shutdown(ctx)
}

func (m *Metrics) request(ctx context.Context, method, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.Record(ctx, d.Seconds(), metric.WithAttributes(
		attribute.String("http.request.method", method),
		attribute.String("http.route", route),
		attribute.String("http.response.status_code", strconv.Itoa(status))))
}

func (m *Metrics) queued(ctx context.Context, kind string) {
	if m == nil {
		return
	}
	m.enqueued.Add(ctx, 1, metric.WithAttributes(attribute.String("vigil.job.kind", kind)))
}

// jobDone records a job a worker ended.
func (m *Metrics) jobDone(job session.Job, res *vigil.Result, err error, d time.Duration) {
	if m == nil {
		return
	}
	outcome := "ok"
	switch {
	case errors.Is(err, agentloop.ErrSuspended):
		outcome = "suspended"
	case errors.Is(err, session.ErrFenced):
		outcome = "fenced"
	case err != nil:
		outcome = "error"
	case res != nil && res.Reason != session.ReasonCompleted:
		outcome = res.Reason
	}
	attrs := metric.WithAttributes(attribute.String("vigil.job.kind", job.Kind), attribute.String("vigil.job.outcome", outcome))
	m.jobs.Add(context.Background(), 1, attrs)
	m.jobTime.Record(context.Background(), d.Seconds(), attrs)
}

// OnJob returns a [vigil.WorkOptions].OnJob that records each job.
func (m *Metrics) OnJob() func(session.Job, *vigil.Result, error) {
	return func(job session.Job, res *vigil.Result, err error) {
		m.jobDone(job, res, err, time.Since(job.Enqueued))
	}
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.opts.Metrics == nil {
		s.writeError(w, r, apiError(http.StatusNotFound, CodeNotFound, "metrics are off"))
		return
	}
	s.opts.Metrics.handler.ServeHTTP(w, r)
}
