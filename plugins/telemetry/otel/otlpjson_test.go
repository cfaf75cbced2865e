package otel

import (
	"testing"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/vigil-run/vigil/plugins/telemetry/otel/collectortest"
)

// FuzzOTLPJSONRoundTrip: whatever export request otlpJSON encodes, the
// collector's decoder reads back as the same request.
func FuzzOTLPJSONRoundTrip(f *testing.F) {
	seed := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: make([]byte, 16), SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}, ParentSpanId: []byte{8, 7, 6, 5, 4, 3, 2, 1},
			Name: "chat <m> & \u2028", Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: 1 << 62,
			Attributes: []*commonpb.KeyValue{{Key: "traceId", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte("x")}}}},
			Links:      []*tracepb.Span_Link{{TraceId: make([]byte, 16), SpanId: make([]byte, 8)}},
			Status:     &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "no"},
		}}}},
	}}}
	b, err := proto.Marshal(seed)
	require.NoError(f, err)
	f.Add(b)
	f.Fuzz(func(t *testing.T, wire []byte) {
		var req coltracepb.ExportTraceServiceRequest
		if proto.Unmarshal(wire, &req) != nil || !wellFormedIDs(&req) {
			t.Skip()
		}
		want, err := collectortest.AsCollectorSees(&req)
		if err != nil {
			t.Skip() // unknown fields the collector's stricter decoder refuses
		}
		out, err := otlpJSON(&req)
		if err != nil {
			t.Skip() // not valid UTF-8, which JSON cannot carry
		}
		got, err := collectortest.Decode(out)
		require.NoError(t, err, "%s", out)
		require.True(t, proto.Equal(want, got), "want %v\n got %v", want, got)
	})
}

// wellFormedIDs: the ids have the lengths OTLP gives them (empty, or 16
// and 8 bytes), as every span vigil rebuilds has.
func wellFormedIDs(req *coltracepb.ExportTraceServiceRequest) bool {
	ok := func(id []byte, n int) bool { return len(id) == 0 || len(id) == n }
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				if !ok(s.TraceId, 16) || !ok(s.SpanId, 8) || !ok(s.ParentSpanId, 8) {
					return false
				}
				for _, l := range s.Links {
					if !ok(l.TraceId, 16) || !ok(l.SpanId, 8) {
						return false
					}
				}
			}
		}
	}
	return true
}
