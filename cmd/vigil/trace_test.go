package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/vigil-run/vigil/plugins/telemetry/otel/collectortest"
	"github.com/vigil-run/vigil/plugins/telemetry/otel/receiver"
)

// runVigil runs the command in process with args, in dir.
func runVigil(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}, args)
	return code, out.String(), errb.String()
}

func spansOf(reqs ...*coltracepb.ExportTraceServiceRequest) []*tracepb.Span {
	var out []*tracepb.Span
	for _, req := range reqs {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	slices.SortFunc(out, func(a, b *tracepb.Span) int { return bytes.Compare(a.SpanId, b.SpanId) })
	return out
}

// TestTraceRebuildsTheLiveTrace: a turn run with telemetry/otel pointed
// at a collector, and `vigil trace` of its stored log (by id, exported to
// the same collector; by file, printed as OTLP JSON), are the same spans:
// ids, parents, times, attributes.
func TestTraceRebuildsTheLiveTrace(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rcv := new(receiver.Receiver)
	srv := grpc.NewServer()
	rcv.Register(srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha"), 0o644))
	cfg := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/scripted
    config:
      script:
        - tool_calls:
            - { name: read_file, arguments: { path: a.txt } }
            - { name: list_dir, arguments: { path: . } }
        - text: "a.txt says alpha."
  - name: agent
    config: { model: scripted }
  - name: tools/fs
    config: { root: . }
  - name: invariants
  - name: telemetry/otel
    config: { endpoint: %q, insecure: true, service_name: traced }
`, ln.Addr().String()), 0o644))

	code, _, stderr := runVigil(t, "run", "-q", "-c", cfg, "what does a.txt say?")
	require.Equal(t, 0, code, stderr)
	live := spansOf(rcv.Traces())
	require.Len(t, live, 5, "a turn, two model calls, two tool calls")

	logs, err := filepath.Glob(filepath.Join(dir, "sessions", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	id := strings.TrimSuffix(filepath.Base(logs[0]), ".jsonl")

	before := len(rcv.Spans())
	code, _, stderr = runVigil(t, "trace", "-c", cfg, id)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "5 spans of 1 session(s) exported")
	all := rcv.Spans()
	require.Len(t, all, before+5)
	again := all[before:]
	slices.SortFunc(again, func(a, b *tracepb.Span) int { return bytes.Compare(a.SpanId, b.SpanId) })
	for i := range live {
		assert.True(t, proto.Equal(live[i], again[i]), "want %v\n got %v", live[i], again[i])
	}

	code, stdout, stderr := runVigil(t, "trace", "-c", cfg, "--format", "otlp-json", logs[0])
	require.Equal(t, 0, code, stderr)
	req, err := collectortest.Decode([]byte(stdout))
	require.NoError(t, err, "the collector's own OTLP JSON decoder reads it")
	printed := spansOf(req)
	require.Len(t, printed, 5)
	for i := range live {
		assert.True(t, proto.Equal(live[i], printed[i]), "want %v\n got %v", live[i], printed[i])
	}
	require.NotEmpty(t, req.ResourceSpans)
	assert.True(t, proto.Equal(rcv.Traces().ResourceSpans[0].Resource, req.ResourceSpans[0].Resource), "the resource is the live one's")
}

// TestTraceOfAMissingSessionIsNotFound: exit 4, and nothing exported.
func TestTraceOfAMissingSessionIsNotFound(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("plugins:\n  - name: store/jsonl\n    config: { dir: sessions }\n"), 0o644))
	code, _, stderr := runVigil(t, "trace", "-c", cfg, "--format", "otlp-json", filepath.Join(dir, "nope.jsonl"))
	assert.Equal(t, exitNotFound, code, stderr)
	code, _, stderr = runVigil(t, "trace", "-c", cfg, "--format", "yaml", "x")
	assert.Equal(t, exitUsage, code, stderr)
}
