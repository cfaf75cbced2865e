package otel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of every span and metric.
const scope = "github.com/vigil-run/vigil/plugins/telemetry/otel"

// pipeline hands [Span]s to the OpenTelemetry SDK: a tracer provider
// whose ids are the log's, and whose spans start and end at the times of
// the log's events.
type pipeline struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	// sampler decides a trace by its id; a child span follows the
	// decision for its trace, made the same way, because the root (the
	// turn) ends, and is emitted, last.
	sampler sdktrace.Sampler
}

func newPipeline(res sdktrace.TracerProviderOption, sampler sdktrace.Sampler, sp sdktrace.SpanProcessor) *pipeline {
	tp := sdktrace.NewTracerProvider(res,
		sdktrace.WithSampler(sdktrace.ParentBased(sampler)),
		sdktrace.WithIDGenerator(logIDs{}),
		sdktrace.WithSpanProcessor(sp))
	return &pipeline{tp: tp, tracer: tp.Tracer(scope, trace.WithSchemaURL(semconv.SchemaURL)), sampler: sampler}
}

// emit records s through the SDK, ended at once with the log's times.
func (p *pipeline) emit(s *Span) {
	// A fresh context: the span's parent is the log's, never a span of
	// whoever appended the record.
	ctx := context.WithValue(context.Background(), idsKey{}, s)
	if s.Parent.IsValid() {
		var flags trace.TraceFlags
		if p.sampled(s.TraceID) {
			flags = trace.FlagsSampled
		}
		ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: s.TraceID, SpanID: s.Parent, TraceFlags: flags}))
	}
	_, span := p.tracer.Start(ctx, s.Name, trace.WithTimestamp(s.Start), trace.WithSpanKind(s.Kind),
		trace.WithAttributes(s.Attributes...))
	if s.Status == codes.Error {
		span.SetStatus(codes.Error, s.Description)
	}
	span.End(trace.WithTimestamp(s.End))
}

func (p *pipeline) sampled(id trace.TraceID) bool {
	return p.sampler.ShouldSample(sdktrace.SamplingParameters{TraceID: id}).Decision == sdktrace.RecordAndSample
}

// idsKey carries the span being emitted to logIDs.
type idsKey struct{}

// logIDs is the SDK's id generator for the spans of emit: the ids the log
// derived, not random ones. The SDK asks its generator for the ids of a
// span being started and offers no other way to choose them; the span
// travels in the context of that one Start call.
type logIDs struct{}

func (logIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	s, _ := ctx.Value(idsKey{}).(*Span)
	if s == nil {
		return trace.TraceID{}, trace.SpanID{}
	}
	return s.TraceID, s.SpanID
}

func (logIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	s, _ := ctx.Value(idsKey{}).(*Span)
	if s == nil {
		return trace.SpanID{}
	}
	return s.SpanID
}

// gate sits in front of the SDK's BatchSpanProcessor and hands it no more
// spans than its queue holds, so that a span the SDK would drop silently
// is instead dropped here and counted. pending counts the spans handed to
// the processor and not yet given to the exporter: the processor's queue
// never holds more.
type gate struct {
	sdktrace.SpanProcessor
	limit   int64
	pending atomic.Int64
	drops   *drops

	// mu orders the exporter's taking of spans with abandon, so that each
	// undelivered span is counted once.
	mu        sync.Mutex
	inflight  int64 // spans in an export call
	abandoned bool
}

// abandon counts every span not yet delivered as dropped, once the bound
// on closing ran out (or the processor finished: then there are none), and
// makes the exporter count nothing more.
func (g *gate) abandon() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.abandoned {
		return
	}
	g.abandoned = true
	if n := g.pending.Swap(0) + g.inflight; n > 0 {
		g.drops.add(n, errAbandoned)
	}
}

var errAbandoned = errors.New("the export did not finish before the plugin stopped")

func (g *gate) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	if g.pending.Add(1) > g.limit {
		g.pending.Add(-1)
		g.drops.add(1, errQueueFull)
		return
	}
	g.SpanProcessor.OnEnd(s)
}

var errQueueFull = errors.New("the export queue is full: the collector is slow or unreachable")

// countingExporter counts what its exporter fails to deliver. It reports
// success to the processor, so the SDK's global error handler does not
// print every failed batch: the failures are counted, and logged once.
type countingExporter struct {
	sdktrace.SpanExporter
	gate *gate
}

func (e countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	g, n := e.gate, int64(len(spans))
	g.mu.Lock()
	if g.abandoned {
		g.mu.Unlock()
		return nil
	}
	g.pending.Add(-n)
	g.inflight += n
	g.mu.Unlock()
	err := e.SpanExporter.ExportSpans(ctx, spans)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight -= n
	if err != nil && !g.abandoned {
		g.drops.add(n, err)
	}
	return nil
}

// countingMetricExporter does for metrics what countingExporter does for
// spans.
type countingMetricExporter struct {
	sdkmetric.Exporter
	drops *drops
}

func (e countingMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := e.Exporter.Export(ctx, rm); err != nil {
		e.drops.addMetrics(err)
	}
	return nil
}

// drops counts what was not delivered and logs the first loss.
type drops struct {
	log     hclog.Logger
	target  string
	spans   atomic.Int64
	metrics atomic.Int64
	once    sync.Once
}

func (d *drops) add(n int64, err error) {
	d.spans.Add(n)
	d.first(err)
}

func (d *drops) addMetrics(err error) {
	d.metrics.Add(1)
	d.first(err)
}

func (d *drops) first(err error) {
	d.once.Do(func() {
		d.log.Warn("dropping telemetry: it is counted, and the totals are logged when the plugin stops; turns are not slowed",
			"endpoint", d.target, "error", err)
	})
}
