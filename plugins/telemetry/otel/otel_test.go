package otel_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/telemetry/otel"
	"github.com/vigil-run/vigil/plugins/telemetry/otel/collectortest"
	"github.com/vigil-run/vigil/plugins/telemetry/otel/receiver"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// collector is a real OTLP receiver in the test process.
type collector struct {
	rcv      *receiver.Receiver
	endpoint string
}

func grpcCollector(t *testing.T) *collector {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rcv := new(receiver.Receiver)
	srv := grpc.NewServer()
	rcv.Register(srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return &collector{rcv: rcv, endpoint: ln.Addr().String()}
}

func httpCollector(t *testing.T) *collector {
	t.Helper()
	rcv := new(receiver.Receiver)
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	return &collector{rcv: rcv, endpoint: srv.URL}
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// proc is one process: the invariants (strict), a jsonl store, the
// telemetry plugin with cfg, and an agent with two tools.
type proc struct {
	t     *testing.T
	c     *bus.Context
	mgr   *live.Manager
	store *jsonl.Store
	fiber *bus.Fiber
	tel   *otel.Telemetry
	logs  *logBuffer
}

func newProc(t *testing.T, cfg otel.Config) *proc {
	t.Helper()
	logs := new(logBuffer)
	root := bus.New(bus.WithLogger(hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn})))
	t.Cleanup(func() { _ = root.Dispose() })
	c := root.Context()
	_, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	require.NoError(t, err)
	store, err := jsonl.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	var n atomic.Int64
	clock := func() time.Time {
		return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(n.Add(1)) * 7 * time.Millisecond)
	}
	mgr := live.NewManager(c, store, live.WithClock(clock))
	_, err = live.Sessions.Provide(c, mgr)
	require.NoError(t, err)
	f, err := c.Plugin(otel.Plugin, &cfg)
	require.NoError(t, err)
	tel, err := otel.Service.Get(c)
	require.NoError(t, err)
	return &proc{t: t, c: c, mgr: mgr, store: store, fiber: f, tel: tel, logs: logs}
}

type tool struct{ name string }

func (tl tool) Spec() session.ToolSpec {
	return session.ToolSpec{Name: tl.name, Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (tl tool) Execute(_ context.Context, args json.RawMessage) (string, error) {
	if tl.name == "fail" {
		return "", assert.AnError
	}
	return tl.name + " ran with " + string(args), nil
}

// turn runs one turn in which the model calls read_file and list_dir,
// then answers; it returns the session's records.
func (p *proc) turn() (*live.Session, []session.Record) {
	p.t.Helper()
	sess, err := p.mgr.Create(context.Background())
	require.NoError(p.t, err)
	res := p.run(sess, agentloop.Config{Model: "test-model", MaxTokens: 256},
		scripted.Reply{ToolCalls: []scripted.ToolCall{
			{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}},
			{Name: "list_dir", Arguments: map[string]any{"path": "."}},
		}},
		scripted.Reply{Text: "Both done."})
	require.Equal(p.t, session.ReasonCompleted, res.Reason)
	return sess, sess.Records()
}

// run runs one turn of sess with a new agent and the scripted replies.
func (p *proc) run(sess *live.Session, cfg agentloop.Config, replies ...scripted.Reply) *agentloop.TurnResult {
	p.t.Helper()
	prov, err := scripted.New(scripted.Config{Script: replies})
	require.NoError(p.t, err)
	a := agentloop.New(p.c, cfg, agentloop.WithProvider(prov),
		agentloop.WithTools(tool{"read_file"}, tool{"list_dir"}, tool{"fail"}))
	res, err := a.Run(context.Background(), sess, "go")
	if res == nil {
		require.NoError(p.t, err)
	}
	return res
}

func ofType(recs []session.Record, typ string) []session.Record {
	var out []session.Record
	for _, r := range recs {
		if r.Type() == typ {
			out = append(out, r)
		}
	}
	return out
}

func attrs(s *tracepb.Span) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		m[kv.Key] = value(kv.Value)
	}
	return m
}

func value(v *commonpb.AnyValue) any {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.Values {
			out = append(out, value(e))
		}
		return out
	}
	return nil
}

func nanos(r session.Record) uint64 { return uint64(r.Time().UnixNano()) }

// TestTurnWithTwoToolCallsIsOneTrace: over gRPC and HTTP, a turn is a
// trace whose root is invoke_agent, with a chat span per step and an
// execute_tool span per call under it, each timed and numbered by the log
// and carrying the GenAI attributes; the metrics arrive beside it.
func TestTurnWithTwoToolCallsIsOneTrace(t *testing.T) {
	for _, tc := range []struct {
		protocol  string
		collector func(*testing.T) *collector
	}{
		{otel.ProtocolGRPC, grpcCollector},
		{otel.ProtocolHTTP, httpCollector},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			col := tc.collector(t)
			p := newProc(t, otel.Config{Endpoint: col.endpoint, Protocol: tc.protocol, Insecure: true, ServiceName: "agents"})
			sess, recs := p.turn()
			require.NoError(t, p.tel.Flush(context.Background()))

			spans := col.rcv.Spans()
			require.Len(t, spans, 5)
			byName := map[string][]*tracepb.Span{}
			for _, s := range spans {
				byName[s.Name] = append(byName[s.Name], s)
			}
			require.Len(t, byName["invoke_agent"], 1)
			require.Len(t, byName["chat test-model"], 2)
			require.Len(t, byName["execute_tool read_file"], 1)
			require.Len(t, byName["execute_tool list_dir"], 1)
			root := byName["invoke_agent"][0]
			assert.Empty(t, root.ParentSpanId)
			for _, s := range spans {
				assert.Equal(t, root.TraceId, s.TraceId, s.Name)
				if s != root {
					assert.Equal(t, root.SpanId, s.ParentSpanId, "%s is a child of the turn", s.Name)
				}
			}

			turnStart, turnEnd := ofType(recs, session.TypeTurnStart)[0], ofType(recs, session.TypeTurnEnd)[0]
			steps, ends := ofType(recs, session.TypeStepStart), ofType(recs, session.TypeStepEnd)
			msgs, digests := ofType(recs, session.TypeAssistantMessage), ofType(recs, session.TypeRequestDigest)
			require.Len(t, steps, 2)
			var in, out int64
			for i, s := range byName["chat test-model"] {
				// The spans arrive in the order their steps ended.
				end, err := session.DecodeData[session.StepEnd](ends[i])
				require.NoError(t, err)
				require.NotNil(t, end.Usage)
				d, err := session.DecodeData[session.Digest](digests[i])
				require.NoError(t, err)
				in, out = in+int64(end.Usage.Input), out+int64(end.Usage.Output)
				assert.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, s.Kind)
				assert.Equal(t, nanos(steps[i]), s.StartTimeUnixNano)
				assert.Equal(t, nanos(msgs[i]), s.EndTimeUnixNano, "the model call ends with its reply")
				a := attrs(s)
				assert.Equal(t, "chat", a["gen_ai.operation.name"])
				assert.Equal(t, scripted.ProviderName, a["gen_ai.provider.name"])
				assert.Equal(t, "test-model", a["gen_ai.request.model"])
				assert.Equal(t, int64(256), a["gen_ai.request.max_tokens"])
				assert.Equal(t, sess.ID(), a["gen_ai.conversation.id"])
				assert.Equal(t, []any{end.Finish}, a["gen_ai.response.finish_reasons"])
				assert.Equal(t, int64(end.Usage.Input), a["gen_ai.usage.input_tokens"])
				assert.Equal(t, int64(end.Usage.Output), a["gen_ai.usage.output_tokens"])
				assert.Equal(t, steps[i].Seq(), a["vigil.session.seq.first"])
				assert.Equal(t, msgs[i].Seq(), a["vigil.session.seq.last"])
				assert.Equal(t, d.SHA256, a["vigil.request.digest"])
				assert.NotContains(t, a, "gen_ai.input.messages", "content is off by default")
			}
			calls, results := ofType(recs, session.TypeToolCall), ofType(recs, session.TypeToolResult)
			require.Len(t, calls, 2)
			for i, name := range []string{"read_file", "list_dir"} {
				s := byName["execute_tool "+name][0]
				c, err := session.DecodeData[session.ToolCall](calls[i])
				require.NoError(t, err)
				a := attrs(s)
				assert.Equal(t, "execute_tool", a["gen_ai.operation.name"])
				assert.Equal(t, name, a["gen_ai.tool.name"])
				assert.Equal(t, c.ID, a["gen_ai.tool.call.id"])
				assert.Equal(t, calls[i].Seq(), a["vigil.session.seq.first"])
				assert.Equal(t, results[i].Seq(), a["vigil.session.seq.last"])
				assert.Equal(t, nanos(calls[i]), s.StartTimeUnixNano)
				assert.Equal(t, nanos(results[i]), s.EndTimeUnixNano)
				assert.NotContains(t, a, "gen_ai.tool.call.arguments")
			}
			a := attrs(root)
			assert.Equal(t, "invoke_agent", a["gen_ai.operation.name"])
			assert.Equal(t, sess.ID(), a["gen_ai.conversation.id"])
			assert.Equal(t, in, a["gen_ai.usage.input_tokens"], "a turn's usage is its steps' sum")
			assert.Equal(t, out, a["gen_ai.usage.output_tokens"])
			assert.Equal(t, turnStart.Seq(), a["vigil.session.seq.first"])
			assert.Equal(t, turnEnd.Seq(), a["vigil.session.seq.last"])
			assert.Equal(t, nanos(turnStart), root.StartTimeUnixNano)
			assert.Equal(t, nanos(turnEnd), root.EndTimeUnixNano)
			assert.Equal(t, tracepb.Status_STATUS_CODE_UNSET, root.GetStatus().GetCode())

			rs := col.rcv.Traces().ResourceSpans
			require.NotEmpty(t, rs)
			assert.Contains(t, rs[0].Resource.Attributes, &commonpb.KeyValue{Key: "service.name",
				Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "agents"}}})

			var metrics []string
			for _, rm := range col.rcv.Metrics().ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						require.NotNil(t, m.GetHistogram(), m.Name)
						metrics = append(metrics, m.Name)
					}
				}
			}
			assert.Contains(t, metrics, "gen_ai.client.token.usage")
			assert.Contains(t, metrics, "gen_ai.client.operation.duration")
			assert.Zero(t, p.tel.Dropped())
		})
	}
}

// sorted returns spans ordered by span id, for comparing two exports.
func sorted(spans []*tracepb.Span) []*tracepb.Span {
	out := slices.Clone(spans)
	slices.SortFunc(out, func(a, b *tracepb.Span) int { return bytes.Compare(a.SpanId, b.SpanId) })
	return out
}

// assertSameSpans: two exports hold the same spans, ids, parents, times,
// attributes and status alike.
func assertSameSpans(t *testing.T, want, got []*tracepb.Span) {
	t.Helper()
	want, got = sorted(want), sorted(got)
	require.Len(t, got, len(want))
	for i := range want {
		assert.True(t, proto.Equal(want[i], got[i]), "span %s:\nwant %v\n got %v", hex.EncodeToString(want[i].SpanId), want[i], got[i])
	}
}

// TestRebuiltSpansAreTheLiveSpans: the spans Export and OTLPJSON rebuild
// from the stored log are the very spans the plugin sent live (so the
// collector sees one trace per turn, not two), content included when it
// is on.
func TestRebuiltSpansAreTheLiveSpans(t *testing.T) {
	for _, content := range []bool{false, true} {
		t.Run(map[bool]string{false: "without content", true: "with content"}[content], func(t *testing.T) {
			ctx := context.Background()
			liveCol := grpcCollector(t)
			cfg := otel.Config{Endpoint: liveCol.endpoint, Insecure: true, Content: content}
			p := newProc(t, cfg)
			sess, _ := p.turn()
			// A second turn: the plugin folds the log again to catch up,
			// and its spans must still be the rebuilt ones.
			p.run(sess, agentloop.Config{Model: "test-model", MaxTokens: 256}, scripted.Reply{Text: "Again."})
			require.NoError(t, p.tel.Flush(ctx))
			require.NoError(t, p.mgr.Close(ctx))

			f, err := os.Open(p.store.Path(sess.ID()))
			require.NoError(t, err)
			defer f.Close()
			stored, err := session.Decode(f)
			require.NoError(t, err)
			log := otel.Log{ID: stored.Info.ID, Records: stored.Records}

			again := grpcCollector(t)
			cfg.Endpoint = again.endpoint
			n, err := otel.Export(ctx, cfg, log)
			require.NoError(t, err)
			assert.Equal(t, 7, n)
			assertSameSpans(t, liveCol.rcv.Spans(), again.rcv.Spans())

			out, err := otel.OTLPJSON(ctx, cfg, log)
			require.NoError(t, err)
			// The OTLP JSON encoding, as the collector reads it: its own
			// decoder, and its OTLP/HTTP receiver.
			req, err := collectortest.Decode(out)
			require.NoError(t, err)
			col := collectortest.Start(t)
			require.NoError(t, col.PostJSON(ctx, out))
			assert.Equal(t, 7, col.Sink.SpanCount())
			var printed []*tracepb.Span
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					printed = append(printed, ss.Spans...)
				}
			}
			assertSameSpans(t, liveCol.rcv.Spans(), printed)

			for _, s := range printed {
				a := attrs(s)
				switch {
				case strings.HasPrefix(s.Name, "chat"):
					in, has := a["gen_ai.input.messages"]
					assert.Equal(t, content, has, s.Name)
					if !has {
						continue
					}
					// The semantic conventions' message shape, from the
					// fold of the log before the step.
					var msgs []struct {
						Role  string `json:"role"`
						Parts []struct {
							Type    string `json:"type"`
							Content string `json:"content"`
						} `json:"parts"`
					}
					require.NoError(t, json.Unmarshal([]byte(in.(string)), &msgs))
					require.NotEmpty(t, msgs)
					assert.Equal(t, "user", msgs[0].Role)
					assert.Equal(t, "go", msgs[0].Parts[0].Content)
					assert.Contains(t, a, "gen_ai.output.messages")
				case strings.HasPrefix(s.Name, "execute_tool"):
					_, has := a["gen_ai.tool.call.result"]
					assert.Equal(t, content, has, s.Name)
				}
			}
		})
	}
}

// hangingTraces is a collector whose trace export hangs until released,
// then fails for good (a code the exporter does not retry).
type hangingTraces struct {
	coltracepb.UnimplementedTraceServiceServer
	release chan struct{}
}

func (h hangingTraces) Export(ctx context.Context, _ *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return nil, status.Error(grpccodes.InvalidArgument, "refused")
}

// hangingGRPC returns the address of a gRPC collector that hangs, and its
// release.
func hangingGRPC(t *testing.T) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := hangingTraces{release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(h.release) }) }
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, h)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { release(); srv.Stop(); <-done })
	return ln.Addr().String(), release
}

// hangingHTTP is hangingGRPC over HTTP.
func hangingHTTP(t *testing.T) (string, func()) {
	t.Helper()
	stop := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(stop) }) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
		http.Error(w, "refused", http.StatusBadRequest)
	}))
	t.Cleanup(func() { release(); srv.Close() })
	return srv.URL, release
}

// closedPort returns an address nothing listens on.
func closedPort(t *testing.T) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr, nil
}

// TestUnreachableCollectorNeverFailsATurn: with the collector's port
// closed, or a collector that does not answer, the turn completes as
// without telemetry. While the collector hangs, the one export in flight
// and the one span the queue holds are all the turn handed over: the
// other spans were dropped at once and counted. Once the plugin stopped,
// every span that was not delivered (here: all five) is counted, and the
// loss was logged once.
func TestUnreachableCollectorNeverFailsATurn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		protocol string
		endpoint func(*testing.T) (string, func())
	}{
		{"closed port over grpc", otel.ProtocolGRPC, closedPort},
		{"closed port over http", otel.ProtocolHTTP, closedPort},
		{"hanging grpc server", otel.ProtocolGRPC, hangingGRPC},
		{"hanging http server", otel.ProtocolHTTP, hangingHTTP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint, release := tc.endpoint(t)
			cfg := otel.Config{Endpoint: endpoint, Protocol: tc.protocol, Insecure: true, QueueSize: 1, Timeout: 200 * time.Millisecond}
			if release != nil {
				// Longer than any turn: the export in flight is still
				// hanging when the turn ends.
				cfg.Timeout = time.Minute
			}
			p := newProc(t, cfg)
			p.turn()
			if release != nil {
				assert.GreaterOrEqual(t, p.tel.Dropped(), int64(3), "the queue had no room, and the turn did not wait for it")
				release()
			}
			require.NoError(t, p.fiber.Dispose())
			assert.Equal(t, int64(5), p.tel.Dropped())
			assert.Equal(t, 1, strings.Count(p.logs.String(), "dropping telemetry"), p.logs.String())
			assert.Contains(t, p.logs.String(), "telemetry dropped: spans=5")
		})
	}
}

// TestFailuresAreErrorStatus: a tool result with an error and a turn that
// did not complete are spans with an error status, error.type saying
// which.
func TestFailuresAreErrorStatus(t *testing.T) {
	col := httpCollector(t)
	p := newProc(t, otel.Config{Endpoint: col.endpoint, Protocol: otel.ProtocolHTTP})
	sess, err := p.mgr.Create(context.Background())
	require.NoError(t, err)
	res := p.run(sess, agentloop.Config{Model: "m", MaxSteps: 1},
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "fail", Arguments: map[string]any{}}}},
		scripted.Reply{Text: "never asked"})
	require.Equal(t, session.ReasonMaxSteps, res.Reason)
	require.NoError(t, p.tel.Flush(context.Background()))
	result, err := session.DecodeData[session.ToolResult](ofType(sess.Records(), session.TypeToolResult)[0])
	require.NoError(t, err)
	require.NotNil(t, result.Error)

	byName := map[string]*tracepb.Span{}
	for _, s := range col.rcv.Spans() {
		byName[s.Name] = s
	}
	require.Len(t, byName, 3)
	tl := byName["execute_tool fail"]
	require.NotNil(t, tl)
	assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, tl.Status.GetCode())
	assert.Contains(t, tl.Status.GetMessage(), result.Error.Code)
	assert.Equal(t, result.Error.Code, attrs(tl)["error.type"])
	turn := byName["invoke_agent"]
	require.NotNil(t, turn)
	assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, turn.Status.GetCode())
	assert.Equal(t, session.ReasonMaxSteps, attrs(turn)["error.type"])
	assert.Equal(t, session.ReasonMaxSteps, attrs(turn)["vigil.turn.reason"])
	assert.Equal(t, tracepb.Status_STATUS_CODE_UNSET, byName["chat m"].Status.GetCode())
}

// TestEveryTurnIsItsOwnTrace: the second turn of a session is a trace of
// its own, and its model calls still name the model of the header an
// earlier turn logged.
func TestEveryTurnIsItsOwnTrace(t *testing.T) {
	col := grpcCollector(t)
	p := newProc(t, otel.Config{Endpoint: col.endpoint, Insecure: true})
	sess, err := p.mgr.Create(context.Background())
	require.NoError(t, err)
	prov, err := scripted.New(scripted.Config{Script: []scripted.Reply{{Text: "one"}, {Text: "two"}}})
	require.NoError(t, err)
	a := agentloop.New(p.c, agentloop.Config{Model: "test-model"}, agentloop.WithProvider(prov))
	for _, prompt := range []string{"first", "second"} {
		_, err := a.Run(context.Background(), sess, prompt)
		require.NoError(t, err)
	}
	require.Len(t, ofType(sess.Records(), session.TypeRequestHeader), 1, "the second turn logs no header")
	require.NoError(t, p.tel.Flush(context.Background()))

	traces := map[string][]string{}
	for _, s := range col.rcv.Spans() {
		traces[hex.EncodeToString(s.TraceId)] = append(traces[hex.EncodeToString(s.TraceId)], s.Name)
	}
	require.Len(t, traces, 2)
	for id, names := range traces {
		assert.ElementsMatch(t, []string{"invoke_agent", "chat test-model"}, names, id)
	}
}

// TestSamplingDecidesWholeTurns: a turn not sampled sends none of its
// spans, its children included (they are emitted before their root); the
// metrics count it all the same.
func TestSamplingDecidesWholeTurns(t *testing.T) {
	col := grpcCollector(t)
	none := 0.0
	p := newProc(t, otel.Config{Endpoint: col.endpoint, Insecure: true, Sampling: &none})
	p.turn()
	require.NoError(t, p.tel.Flush(context.Background()))
	assert.Empty(t, col.rcv.Spans())
	assert.NotEmpty(t, col.rcv.Metrics().ResourceMetrics)
	assert.Zero(t, p.tel.Dropped())
}

// TestAForkLeavesItsParentsTurnsToTheParent: the spans of a fork are its
// own turns'; the inherited ones are in its parent's traces.
func TestAForkLeavesItsParentsTurnsToTheParent(t *testing.T) {
	col := grpcCollector(t)
	p := newProc(t, otel.Config{Endpoint: col.endpoint, Insecure: true})
	parent, recs := p.turn()
	fork, err := p.mgr.Fork(context.Background(), parent.ID(), recs[len(recs)-1].Seq())
	require.NoError(t, err)
	assert.Empty(t, otel.Spans(fork.ID(), fork.Records(), otel.Options{}))
	p.run(fork, agentloop.Config{Model: "test-model"}, scripted.Reply{Text: "forked"})
	spans := otel.Spans(fork.ID(), fork.Records(), otel.Options{})
	require.Len(t, spans, 2)
	for _, s := range spans {
		assert.Greater(t, s.First, recs[len(recs)-1].Seq(), s.Name)
	}
}

// TestTheEnvironmentSaysWhatTheConfigLeavesOut: with no endpoint, no
// protocol and no service name in the config, the standard OTEL_*
// variables say them.
func TestTheEnvironmentSaysWhatTheConfigLeavesOut(t *testing.T) {
	for _, tc := range []struct {
		protocol  string
		collector func(*testing.T) *collector
	}{
		{"grpc", grpcCollector},
		{"http/protobuf", httpCollector},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			col := tc.collector(t)
			endpoint := col.endpoint
			if !strings.Contains(endpoint, "://") {
				endpoint = "http://" + endpoint
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tc.protocol)
			t.Setenv("OTEL_SERVICE_NAME", "from-env")
			p := newProc(t, otel.Config{})
			p.turn()
			require.NoError(t, p.tel.Flush(context.Background()))
			require.Len(t, col.rcv.Spans(), 5)
			rs := col.rcv.Traces().ResourceSpans
			assert.Contains(t, rs[0].Resource.Attributes, &commonpb.KeyValue{Key: "service.name",
				Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "from-env"}}})
		})
	}
}

func TestConfigRefusesWhatCannotWork(t *testing.T) {
	half, two := 0.5, 2.0
	for _, tc := range []struct {
		name string
		cfg  otel.Config
		ok   bool
	}{
		{"defaults", otel.Config{}, true},
		{"an http URL", otel.Config{Endpoint: "http://collector:4318/otlp", Protocol: otel.ProtocolHTTP, Sampling: &half}, true},
		{"an unknown protocol", otel.Config{Protocol: "udp"}, false},
		{"a ratio above 1", otel.Config{Sampling: &two}, false},
		{"a URL of another scheme", otel.Config{Endpoint: "ftp://collector"}, false},
		{"a negative queue", otel.Config{QueueSize: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, otel.ErrConfig)
		})
	}
}
