package otel

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Protocols of the OTLP exporters.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http"
)

// Defaults of [Config].
const (
	DefaultServiceName = "vigil"
	DefaultTimeout     = 10 * time.Second
	DefaultQueueSize   = sdktrace.DefaultMaxQueueSize
)

// ErrConfig is wrapped by the errors of an invalid [Config].
var ErrConfig = errors.New("telemetry/otel: invalid config")

// Config is the plugin's config. What it leaves empty the standard
// OTEL_* environment variables say, as the OpenTelemetry SDK reads them
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_MAX_QUEUE_SIZE, …).
type Config struct {
	Endpoint string            `yaml:"endpoint" doc:"the collector: host:port, or a URL (http:// is insecure); default from OTEL_EXPORTER_OTLP_ENDPOINT, else localhost:4317 (grpc) or localhost:4318 (http)"`
	Protocol string            `yaml:"protocol" enum:"grpc,http" doc:"grpc or http (OTLP/HTTP protobuf); default from OTEL_EXPORTER_OTLP_PROTOCOL, else grpc"`
	Headers  map[string]string `yaml:"headers" doc:"sent with every export, e.g. an API key from a ${VAR}"`
	Insecure bool              `yaml:"insecure" doc:"no TLS to a host:port endpoint"`
	// Sampling is the ratio of turns traced live, by trace id (so every
	// process decides a turn alike); nil means 1.
	Sampling    *float64      `yaml:"sampling" doc:"ratio of turns traced, 0 to 1 (default 1)"`
	ServiceName string        `yaml:"service_name" doc:"service.name of the resource (default OTEL_SERVICE_NAME, else vigil)"`
	Content     bool          `yaml:"content" doc:"put message content, tool arguments and results in spans (default off)"`
	Timeout     time.Duration `yaml:"timeout" doc:"bound on one export (default 10s)"`
	QueueSize   int           `yaml:"queue_size" doc:"spans waiting for export; more are dropped, counted and logged once (default OTEL_BSP_MAX_QUEUE_SIZE, else 2048)"`
}

// Validate checks the protocol, the endpoint and the ratio.
func (c *Config) Validate() error {
	switch c.Protocol {
	case "", ProtocolGRPC, ProtocolHTTP:
	default:
		return fmt.Errorf("%w: protocol %q: want grpc or http", ErrConfig, c.Protocol)
	}
	if c.Sampling != nil && (*c.Sampling < 0 || *c.Sampling > 1) {
		return fmt.Errorf("%w: sampling %v: want a ratio from 0 to 1", ErrConfig, *c.Sampling)
	}
	if c.QueueSize < 0 || c.Timeout < 0 {
		return fmt.Errorf("%w: queue_size and timeout cannot be negative", ErrConfig)
	}
	if _, err := c.target(); err != nil {
		return err
	}
	return nil
}

// protocol is the config's, else the one OTEL_EXPORTER_OTLP_PROTOCOL
// names (http/protobuf is http), else grpc.
func (c *Config) protocol() string {
	if c.Protocol != "" {
		return c.Protocol
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if os.Getenv(v) == "http/protobuf" {
			return ProtocolHTTP
		} else if os.Getenv(v) != "" {
			break
		}
	}
	return ProtocolGRPC
}

// Destination says where the spans of c go: the endpoint, else the one
// the environment names (and which variable), else the exporters'
// default; and over which protocol.
func (c *Config) Destination() string {
	proto := c.protocol()
	endpoint, from := c.Endpoint, ""
	if endpoint == "" {
		for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
			if endpoint = os.Getenv(v); endpoint != "" {
				from = " (" + v + ")"
				break
			}
		}
	}
	if endpoint == "" {
		endpoint, from = "localhost:4317", " (the default)"
		if proto == ProtocolHTTP {
			endpoint = "localhost:4318"
		}
	}
	name := map[string]string{ProtocolGRPC: "OTLP/gRPC", ProtocolHTTP: "OTLP/HTTP"}[proto]
	return endpoint + from + " over " + name
}

func (c *Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

func (c *Config) queueSize() int {
	if c.QueueSize > 0 {
		return c.QueueSize
	}
	if n, err := strconv.Atoi(os.Getenv("OTEL_BSP_MAX_QUEUE_SIZE")); err == nil && n > 0 {
		return n
	}
	return DefaultQueueSize
}

func (c *Config) ratio() float64 {
	if c.Sampling == nil {
		return 1
	}
	return *c.Sampling
}

// target is where the endpoint points.
type target struct {
	host     string // host:port; empty: the exporters' default (the environment)
	path     string // a URL's path before the signal's /v1/…
	insecure bool
}

func (c *Config) target() (target, error) {
	t := target{host: c.Endpoint, insecure: c.Insecure}
	if !strings.Contains(c.Endpoint, "://") {
		return t, nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return t, fmt.Errorf("%w: endpoint %q: want host:port or an http(s) URL", ErrConfig, c.Endpoint)
	}
	t.host, t.path = u.Host, strings.TrimSuffix(u.Path, "/")
	t.insecure = t.insecure || u.Scheme == "http"
	return t, nil
}

// otlpOptions names one exporter package's option constructors, so that
// the four exporters (traces and metrics, over HTTP and gRPC) take the
// same settings from one place. urlPath is nil for gRPC, which has no
// path.
type otlpOptions[O any] struct {
	timeout  func(time.Duration) O
	endpoint func(string) O
	urlPath  func(string) O
	insecure func() O
	headers  func(map[string]string) O
}

// of returns the options for target t, its signal's path under
// /v1/signal.
func (f otlpOptions[O]) of(c *Config, t target, signal string) []O {
	opts := []O{f.timeout(c.timeout())}
	if t.host != "" {
		opts = append(opts, f.endpoint(t.host))
	}
	if f.urlPath != nil && t.path != "" {
		opts = append(opts, f.urlPath(t.path+"/v1/"+signal))
	}
	if t.insecure {
		opts = append(opts, f.insecure())
	}
	if len(c.Headers) > 0 {
		opts = append(opts, f.headers(c.Headers))
	}
	return opts
}

// spanExporter makes the OTLP trace exporter of c.
func (c *Config) spanExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	t, err := c.target()
	if err != nil {
		return nil, err
	}
	if c.protocol() == ProtocolHTTP {
		return otlptracehttp.New(ctx, otlpOptions[otlptracehttp.Option]{otlptracehttp.WithTimeout, otlptracehttp.WithEndpoint,
			otlptracehttp.WithURLPath, otlptracehttp.WithInsecure, otlptracehttp.WithHeaders}.of(c, t, "traces")...)
	}
	return otlptracegrpc.New(ctx, otlpOptions[otlptracegrpc.Option]{otlptracegrpc.WithTimeout, otlptracegrpc.WithEndpoint,
		nil, otlptracegrpc.WithInsecure, otlptracegrpc.WithHeaders}.of(c, t, "traces")...)
}

// metricExporter makes the OTLP metric exporter of c, to the same
// collector.
func (c *Config) metricExporter(ctx context.Context) (sdkmetric.Exporter, error) {
	t, err := c.target()
	if err != nil {
		return nil, err
	}
	if c.protocol() == ProtocolHTTP {
		return otlpmetrichttp.New(ctx, otlpOptions[otlpmetrichttp.Option]{otlpmetrichttp.WithTimeout, otlpmetrichttp.WithEndpoint,
			otlpmetrichttp.WithURLPath, otlpmetrichttp.WithInsecure, otlpmetrichttp.WithHeaders}.of(c, t, "metrics")...)
	}
	return otlpmetricgrpc.New(ctx, otlpOptions[otlpmetricgrpc.Option]{otlpmetricgrpc.WithTimeout, otlpmetricgrpc.WithEndpoint,
		nil, otlpmetricgrpc.WithInsecure, otlpmetricgrpc.WithHeaders}.of(c, t, "metrics")...)
}

// resource is the resource of every span and metric: service.name from
// the config, else from the environment, else vigil.
func (c *Config) resource(ctx context.Context) (*resource.Resource, error) {
	opts := []resource.Option{
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	}
	if c.ServiceName != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceName(c.ServiceName)))
	}
	r, err := resource.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry/otel: resource: %w", err)
	}
	return r, nil
}
