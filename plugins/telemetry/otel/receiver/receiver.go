// Package receiver is an in-process OTLP receiver: the collector's trace
// and metrics services over gRPC, and the OTLP/HTTP protobuf endpoints as
// an http.Handler, keeping every request it is sent, decoded with the
// official go.opentelemetry.io/proto/otlp types. `vigil trace --format
// otlp-json` exports to one to print exactly what a collector would get;
// tests point the telemetry/otel plugin at one.
package receiver

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// MaxBody bounds the body of one OTLP/HTTP request.
const MaxBody = 64 << 20

// Receiver keeps the export requests it is sent. The zero value is ready;
// it is safe for concurrent use.
type Receiver struct {
	mu      sync.Mutex
	traces  []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricpb.ExportMetricsServiceRequest
	changed chan struct{}
}

// Register adds the trace and metrics services to s.
func (r *Receiver) Register(s grpc.ServiceRegistrar) {
	coltracepb.RegisterTraceServiceServer(s, traceService{r: r})
	colmetricpb.RegisterMetricsServiceServer(s, metricService{r: r})
}

type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.r.addTraces(proto.Clone(req).(*coltracepb.ExportTraceServiceRequest))
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type metricService struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s metricService) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	s.r.addMetrics(proto.Clone(req).(*colmetricpb.ExportMetricsServiceRequest))
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// ServeHTTP answers POST /v1/traces and /v1/metrics with a protobuf body
// (gzip or not), as OTLP/HTTP defines them.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, MaxBody)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var resp proto.Message
	switch req.URL.Path {
	case "/v1/traces":
		m := new(coltracepb.ExportTraceServiceRequest)
		if err = proto.Unmarshal(data, m); err == nil {
			r.addTraces(m)
		}
		resp = &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		m := new(colmetricpb.ExportMetricsServiceRequest)
		if err = proto.Unmarshal(data, m); err == nil {
			r.addMetrics(m)
		}
		resp = &colmetricpb.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, req)
		return
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("decode %s: %v", req.URL.Path, err), http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) addTraces(m *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.traces = append(r.traces, m)
	r.notifyLocked()
}

func (r *Receiver) addMetrics(m *colmetricpb.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.metrics = append(r.metrics, m)
	r.notifyLocked()
}

func (r *Receiver) notifyLocked() {
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// Changed returns a channel closed when the next request arrives.
func (r *Receiver) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// Traces returns every trace request received so far, merged into one
// (their resource spans in the order they came).
func (r *Receiver) Traces() *coltracepb.ExportTraceServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := new(coltracepb.ExportTraceServiceRequest)
	for _, m := range r.traces {
		out.ResourceSpans = append(out.ResourceSpans, proto.Clone(m).(*coltracepb.ExportTraceServiceRequest).ResourceSpans...)
	}
	return out
}

// Metrics returns every metrics request received so far, merged into one.
func (r *Receiver) Metrics() *colmetricpb.ExportMetricsServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := new(colmetricpb.ExportMetricsServiceRequest)
	for _, m := range r.metrics {
		out.ResourceMetrics = append(out.ResourceMetrics, proto.Clone(m).(*colmetricpb.ExportMetricsServiceRequest).ResourceMetrics...)
	}
	return out
}

// Spans returns every span received so far.
func (r *Receiver) Spans() []*tracepb.Span {
	var out []*tracepb.Span
	for _, rs := range r.Traces().ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			out = append(out, ss.Spans...)
		}
	}
	return out
}
