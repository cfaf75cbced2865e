package otel

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// Name is the plugin's registered name.
const Name = "telemetry/otel"

// Plugin is the registered plugin.
var Plugin = bus.RegisterFunc(Name, "OpenTelemetry: every turn as a GenAI trace, with token and duration metrics, to an OTLP collector", apply)

// Service is the plugin's service, for a host that wants to flush the
// telemetry or count what was dropped.
var Service = bus.NewService[*Telemetry]("telemetry/otel")

// Telemetry is a mounted plugin: it turns every committed record of every
// session into the spans the record closes (see [Spans]) and hands them to
// the SDK's batch processor, and records the metrics of each model call.
// Nothing it does waits for the collector: a turn is never slowed or
// failed by it. Its methods are safe for concurrent use.
type Telemetry struct {
	cfg     Config
	log     hclog.Logger
	pipe    *pipeline
	gate    *gate
	drops   *drops
	mp      *sdkmetric.MeterProvider
	tokens  genaiconv.ClientTokenUsage
	latency genaiconv.ClientOperationDuration

	mu       sync.Mutex
	sessions map[string]*sessionState
	closed   bool
}

type sessionState struct {
	sess *live.Session
	b    *builder
}

func apply(c *bus.Context, cfg Config) error {
	t, err := Start(c.Context(), cfg, c.Logger())
	if err != nil {
		return err
	}
	if err := c.Effect(func() func() {
		return func() { _ = t.Close(context.Background()) }
	}); err != nil {
		_ = t.Close(context.Background())
		return err
	}
	// Global: a scoped mount still traces every session.
	live.Committed.On(c, t.observe, bus.Global)
	if _, err := Service.Provide(c, t); err != nil {
		return err
	}
	return nil
}

// Start makes the exporters, processors and instruments cfg describes. It
// does not connect: the exporters do, in the background. Close stops it.
func Start(ctx context.Context, cfg Config, log hclog.Logger) (*Telemetry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	res, err := cfg.resource(ctx)
	if err != nil {
		return nil, err
	}
	exp, err := cfg.spanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry/otel: trace exporter: %w", err)
	}
	mexp, err := cfg.metricExporter(ctx)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry/otel: metric exporter: %w", err)
	}
	d := &drops{log: log, target: cfg.Endpoint}
	q := cfg.queueSize()
	g := &gate{limit: int64(q), drops: d}
	g.SpanProcessor = sdktrace.NewBatchSpanProcessor(countingExporter{SpanExporter: exp, gate: g},
		sdktrace.WithMaxQueueSize(q), sdktrace.WithMaxExportBatchSize(min(q, sdktrace.DefaultMaxExportBatchSize)),
		sdktrace.WithExportTimeout(cfg.timeout()))
	t := &Telemetry{cfg: cfg, log: log, gate: g, drops: d, sessions: map[string]*sessionState{},
		pipe: newPipeline(sdktrace.WithResource(res), sdktrace.TraceIDRatioBased(cfg.ratio()), g)}
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(countingMetricExporter{Exporter: mexp, drops: d},
			sdkmetric.WithTimeout(cfg.timeout()))))
	meter := t.mp.Meter(scope)
	if t.tokens, err = genaiconv.NewClientTokenUsage(meter); err == nil {
		t.latency, err = genaiconv.NewClientOperationDuration(meter)
	}
	if err != nil {
		_ = t.Close(ctx)
		return nil, fmt.Errorf("telemetry/otel: instruments: %w", err)
	}
	return t, nil
}

// observe is the session/event observer: it folds the record into its
// session's spans and emits those the record closes.
func (t *Telemetry) observe(_ context.Context, cm live.Commit) error {
	r := cm.Record()
	id := cm.Session().ID()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	st := t.sessions[id]
	if st == nil || st.sess != cm.Session() || st.b.next != r.Seq() {
		// First met here (a new process, a loaded session, a turn after
		// the last one ended), or records were added without a commit
		// (crash repair): fold the log before r without emitting. What
		// that closed was emitted when it was committed, or is for
		// `vigil trace` to export.
		b := newBuilder(id, Options{Content: t.cfg.Content})
		b.quiet = true
		for _, old := range cm.Session().Records() {
			if old.Seq() >= r.Seq() {
				break
			}
			b.add(old)
		}
		b.quiet = false
		st = &sessionState{sess: cm.Session(), b: b}
		t.sessions[id] = st
	}
	spans := st.b.add(r)
	if r.Type() == session.TypeTurnEnd {
		// Between turns the state is the header alone, which the next
		// turn refolds: an idle session costs nothing here.
		delete(t.sessions, id)
	}
	t.mu.Unlock()
	for i := range spans {
		t.emit(&spans[i])
	}
	return nil
}

// emit sends s, when its trace is sampled, and records the metrics of a
// model call whatever the sampling.
func (t *Telemetry) emit(s *Span) {
	t.pipe.emit(s)
	if s.Kind != trace.SpanKindClient {
		return
	}
	ctx := context.Background()
	op, prov := genaiconv.OperationNameChat, genaiconv.ProviderNameAttr(s.provider)
	attrs := []attribute.KeyValue{t.tokens.AttrRequestModel(s.model)}
	if s.usage != nil {
		t.tokens.Record(ctx, int64(s.usage.Input), op, prov, genaiconv.TokenTypeInput, attrs...)
		t.tokens.Record(ctx, int64(s.usage.Output), op, prov, genaiconv.TokenTypeOutput, attrs...)
	}
	if s.errType != "" {
		attrs = append(attrs, t.latency.AttrErrorType(genaiconv.ErrorTypeAttr(s.errType)))
	}
	t.latency.Record(ctx, s.End.Sub(s.Start).Seconds(), op, prov, attrs...)
}

// Flush exports what is queued, spans and metrics, and returns when the
// exporters answered or ctx is done.
func (t *Telemetry) Flush(ctx context.Context) error {
	return errors.Join(t.pipe.tp.ForceFlush(ctx), t.mp.ForceFlush(ctx))
}

// Dropped returns how many spans did not reach the collector so far: those
// the queue had no room for and those whose export failed. After Close it
// also counts those still queued when the bound on closing ran out.
func (t *Telemetry) Dropped() int64 { return t.drops.spans.Load() }

// Close stops observing, exports what is queued within the config's
// timeout, and shuts the exporters down. Spans it could not deliver are
// counted as dropped, and the totals are logged. Closing twice does
// nothing.
func (t *Telemetry) Close(ctx context.Context) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.sessions = nil
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, t.cfg.timeout())
	defer cancel()
	// Both at once, so that the one bound covers the two.
	mdone := make(chan error, 1)
	go func() { mdone <- t.mp.Shutdown(ctx) }()
	err := t.pipe.tp.Shutdown(ctx)
	err = errors.Join(err, <-mdone)
	t.gate.abandon()
	if n, m := t.drops.spans.Load(), t.drops.metrics.Load(); n > 0 || m > 0 {
		t.log.Warn("telemetry dropped", "spans", n, "metric_exports", m, "endpoint", t.cfg.Endpoint)
	}
	if ctx.Err() != nil {
		// Bounded on purpose: what was left is counted above.
		return nil
	}
	return err
}

var _ sdktrace.SpanProcessor = (*gate)(nil)
