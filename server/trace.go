package server

import (
	"net/http"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/vigil-run/vigil/plugins/telemetry/otel"
)

// TraceSpan is one span of a session's trace waterfall.
type TraceSpan struct {
	ID      string `json:"id"`
	TraceID string `json:"trace_id"`
	// Parent is the parent span's id, "" for a turn's (the root of its
	// trace).
	Parent string `json:"parent"`
	Name   string `json:"name"`
	// Kind is the OpenTelemetry span kind: internal, client, ….
	Kind string `json:"kind"`
	// Start and End are the times of the events that open and close the
	// span, in the log's own time format (RFC 3339 in UTC, exactly three
	// fraction digits): the records' times are all a span has.
	Start string `json:"start"`
	End   string `json:"end"`
	// Turn and Step number the span's turn and step (0 when it has none).
	Turn int `json:"turn"`
	Step int `json:"step"`
	// Error says what failed, when the log records a failure.
	Error      string         `json:"error,omitempty"`
	Attributes map[string]any `json:"attributes"`
}

// Trace is what GET /v1/sessions/{id}/trace answers.
type Trace struct {
	Session string      `json:"session"`
	Spans   []TraceSpan `json:"spans"`
}

// handleTrace answers the spans of the session's turns, from the fold
// `vigil trace` and the telemetry/otel plugin build them with
// ([otel.Spans]), without message content: a turn still open has none.
func (s *Server) handleTrace(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	info := admitted(r)
	st, err := s.readStored(r, info)
	if err != nil {
		return 0, nil, err
	}
	spans := otel.Spans(info.ID, st.log.Records, otel.Options{})
	out := Trace{Session: info.ID, Spans: make([]TraceSpan, 0, len(spans))}
	for _, sp := range spans {
		ts := TraceSpan{ID: sp.SpanID.String(), TraceID: sp.TraceID.String(), Name: sp.Name, Kind: sp.Kind.String(),
			Start: logTime(sp.Start), End: logTime(sp.End), Attributes: make(map[string]any, len(sp.Attributes))}
		if sp.Parent.IsValid() {
			ts.Parent = sp.Parent.String()
		}
		if sp.Status == codes.Error {
			ts.Error = sp.Description
			if ts.Error == "" {
				ts.Error = "error"
			}
		}
		for _, kv := range sp.Attributes {
			ts.Attributes[string(kv.Key)] = kv.Value.AsInterface()
			switch kv.Key {
			case otel.AttrTurn:
				ts.Turn = int(kv.Value.AsInt64())
			case otel.AttrStep:
				ts.Step = int(kv.Value.AsInt64())
			}
		}
		out.Spans = append(out.Spans, ts)
	}
	return http.StatusOK, out, nil
}

// logTime formats t as the log writes its times, so a span's times have
// the same shape as every other time the API answers.
func logTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
