// Package collectortest holds the OpenTelemetry Collector's own OTLP code
// up to what vigil prints and sends: its pdata JSON decoder and its
// otlpreceiver serving OTLP/HTTP. Only tests import it, so the collector's
// modules are in go.mod for the tests and never in the vigil binary.
package collectortest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Decode decodes an OTLP JSON trace export with the collector's
// ptrace.JSONUnmarshaler, and returns it as the protobuf request it
// stands for.
func Decode(data []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data)
	if err != nil {
		return nil, err
	}
	return fromPdata(td)
}

// AsCollectorSees returns req as the collector holds it once read from
// the protobuf wire (all-zero ids empty, empty resources present), to
// compare with what [Decode] returns.
func AsCollectorSees(req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceRequest, error) {
	wire, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(wire)
	if err != nil {
		return nil, err
	}
	return fromPdata(td)
}

func fromPdata(td ptrace.Traces) (*coltracepb.ExportTraceServiceRequest, error) {
	wire, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		return nil, err
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(wire, &req); err != nil {
		return nil, err
	}
	return &req, nil
}

// Collector is the collector's OTLP receiver on OTLP/HTTP, with a sink
// that keeps the traces it accepts.
type Collector struct {
	// URL is the receiver's traces endpoint, http://127.0.0.1:PORT/v1/traces.
	URL  string
	Sink *consumertest.TracesSink
}

// Start starts a collector OTLP receiver on a free local port, stopped
// when the test ends.
func Start(t testing.TB) *Collector {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	httpCfg := *cfg.Protocols.HTTP.GetOrInsertDefault()
	httpCfg.ServerConfig.NetAddr.Endpoint = addr
	cfg.Protocols.HTTP = configoptional.Some(httpCfg)
	cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()

	c := &Collector{URL: "http://" + addr + "/v1/traces", Sink: new(consumertest.TracesSink)}
	ctx := context.Background()
	rcv, err := f.CreateTraces(ctx, receivertest.NewNopSettings(f.Type()), cfg, c.Sink)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(ctx, componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, rcv.Shutdown(context.Background())) })
	return c
}

// PostJSON sends body to the receiver as OTLP/HTTP JSON, and returns an
// error naming the status and the receiver's answer unless it is 200.
func (c *Collector) PostJSON(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("collector answered %s: %s", resp.Status, answer)
	}
	return nil
}
