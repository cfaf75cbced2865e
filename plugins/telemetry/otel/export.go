package otel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-run/vigil/plugins/telemetry/otel/receiver"
	"github.com/vigil-run/vigil/session"
)

// Log is a stored session log: its id and its records.
type Log struct {
	ID      string
	Records []session.Record
}

// Export rebuilds the spans of logs (see [Spans]) and exports them to the
// collector cfg names, the way the plugin would have sent them live: the
// same ids, times and attributes. Every turn is exported (sampling is for
// live traffic). It returns the number of spans, and the first export
// error.
func Export(ctx context.Context, cfg Config, logs ...Log) (int, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	res, err := cfg.resource(ctx)
	if err != nil {
		return 0, err
	}
	exp, err := cfg.spanExporter(ctx)
	if err != nil {
		return 0, fmt.Errorf("telemetry/otel: trace exporter: %w", err)
	}
	fe := &firstError{SpanExporter: exp}
	// Blocking: offline, every span is sent, however many there are.
	bsp := sdktrace.NewBatchSpanProcessor(fe, sdktrace.WithBlocking(), sdktrace.WithExportTimeout(cfg.timeout()))
	p := newPipeline(sdktrace.WithResource(res), sdktrace.AlwaysSample(), bsp)
	n := 0
	for _, l := range logs {
		spans := Spans(l.ID, l.Records, Options{Content: cfg.Content})
		for i := range spans {
			p.emit(&spans[i])
		}
		n += len(spans)
	}
	if err := p.tp.Shutdown(ctx); err != nil {
		return n, fmt.Errorf("telemetry/otel: export: %w", err)
	}
	if err := fe.get(); err != nil {
		return n, fmt.Errorf("telemetry/otel: export to %s: %w", cfg.Destination(), err)
	}
	return n, nil
}

// OTLPJSON returns what [Export] would send for logs as one
// ExportTraceServiceRequest in the OTLP JSON encoding (hex ids, integer
// enums), which a collector's OTLP/HTTP receiver accepts as it is: the
// spans are exported over OTLP/HTTP to a receiver in this process, and
// what it got is printed.
func OTLPJSON(ctx context.Context, cfg Config, logs ...Log) ([]byte, error) {
	var rcv receiver.Receiver
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("telemetry/otel: listen for the in-process receiver: %w", err)
	}
	srv := &http.Server{Handler: &rcv}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	local := Config{Protocol: ProtocolHTTP, Endpoint: ln.Addr().String(), Insecure: true,
		ServiceName: cfg.ServiceName, Content: cfg.Content, Timeout: cfg.Timeout}
	_, err = Export(ctx, local, logs...)
	_ = srv.Close()
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	out, err := otlpJSON(rcv.Traces())
	if err != nil {
		return nil, fmt.Errorf("telemetry/otel: otlp json: %w", err)
	}
	return out, nil
}

// firstError keeps the first error of its exporter, for Export to return
// (the SDK would only hand it to its global error handler).
type firstError struct {
	sdktrace.SpanExporter
	mu  sync.Mutex
	err error
}

func (e *firstError) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.mu.Lock()
		if e.err == nil {
			e.err = err
		}
		e.mu.Unlock()
	}
	return nil
}

func (e *firstError) get() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}
