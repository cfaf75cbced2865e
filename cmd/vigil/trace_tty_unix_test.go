//go:build unix

package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTraceWithoutTelemetrySaysWhereAndShowsProgress: `vigil trace ID`
// with no telemetry/otel entry says at once where it exports and that
// --format otlp-json exists, then shows the export's progress on the
// terminal while the collector keeps it waiting.
func TestTraceWithoutTelemetrySaysWhereAndShowsProgress(t *testing.T) {
	// A collector that takes the connection and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	endpoint := "http://" + ln.Addr().String()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/scripted
    config: { script: [ { text: "hi" } ] }
  - name: agent
    config: { model: scripted }
`), 0o644))
	code, _, stderr := runVigil(t, "run", "-q", "-c", cfg, "hello")
	require.Equal(t, exitOK, code, stderr)
	logs, err := filepath.Glob(filepath.Join(dir, "sessions", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	id := strings.TrimSuffix(filepath.Base(logs[0]), ".jsonl")

	p := startOnTerminal(t, dir, "trace", "-c", cfg, id)
	p.expect(t, regexp.QuoteMeta("no telemetry/otel entry in the composition: exporting to "+endpoint+
		" (OTEL_EXPORTER_OTLP_ENDPOINT) over OTLP/gRPC (--format otlp-json prints the spans instead)"))
	p.expect(t, regexp.QuoteMeta("exporting 1 session(s) to "+endpoint)+` .* [0-9.]+s`)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	assert.Error(t, p.wait(t))
	assert.NotContains(t, p.output(), "export to :")
}
