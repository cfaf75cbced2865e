package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/providerhttp"
)

const (
	// providerName names the provider in [agentloop.ProviderError] values.
	providerName = "anthropic"
	// apiVersion is the anthropic-version header: the API version the
	// wire types follow, the one the official SDK (v2.15.0) sends.
	apiVersion = "2026-10-21"
	// userAgent names the client to the server.
	userAgent = "vigil (provider/anthropic)"
)

// Provider streams replies from the Anthropic Messages API. It is safe
// for concurrent use; each Stream call is one HTTP request.
type Provider struct {
	cfg Config
	api *providerhttp.Endpoint
}

// Option configures a [Provider].
type Option = providerhttp.Option

// WithHTTPClient sets the HTTP client requests are sent with, for a
// program that brings its own transport (a proxy, a test server). The
// default is a client of its own with a ten-minute response-header
// timeout and no overall timeout, since a stream may legitimately run for
// minutes.
func WithHTTPClient(c *http.Client) Option {
	return providerhttp.WithHTTPClient(c)
}

// New returns a provider for cfg, or cfg's validation error.
func New(cfg Config, opts ...Option) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The config is the only source of where requests go and which
	// credential they carry: no ANTHROPIC_* variables, no profiles. The
	// agent loop retries, with backoff, what is safe to retry, so nothing
	// here does.
	header := http.Header{
		"Accept":            {"application/json"},
		"User-Agent":        {userAgent},
		"Anthropic-Version": {apiVersion},
	}
	if cfg.APIKey != "" {
		header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	api, err := providerhttp.NewEndpoint(cfg.BaseURL, DefaultBaseURL, "v1/messages", header, cfg.APIKey, cfg.limits(), opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return &Provider{cfg: cfg, api: api}, nil
}

// Stream sends req and returns the reply as it streams. Errors before the
// first byte of the reply (an HTTP status, a refused connection) are
// returned here; later ones end the stream. The response body is closed
// when iteration ends, however it ends; a stream that is never ranged
// over holds its connection until ctx is done. A stream can be ranged
// over once.
func (p *Provider) Stream(ctx context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	if req == nil {
		return nil, &agentloop.ProviderError{Provider: providerName, Err: errors.New("nil request")}
	}
	body, err := params(req, p.cfg)
	if err != nil {
		return nil, &agentloop.ProviderError{Provider: providerName, Err: fmt.Errorf("building request: %w", err)}
	}
	b, err := providerhttp.Marshal(body, true)
	if err != nil {
		return nil, &agentloop.ProviderError{Provider: providerName, Err: fmt.Errorf("building request: %w", err)}
	}
	res, err := p.api.Post(ctx, b)
	if err != nil {
		return nil, p.fail(ctx, err, false)
	}
	return p.iterate(ctx, res.Body), nil
}

var _ agentloop.Provider = (*Provider)(nil)

// Name implements agentloop.Namer: the provider named in request headers.
func (p *Provider) Name() string { return providerName }

var _ agentloop.Namer = (*Provider)(nil)

// DefaultModel implements agentloop.DefaultModeler: the config's model,
// which a request whose header names none is sent with. The loop puts it
// in the header it logs, so the log names the model each request asked
// for.
func (p *Provider) DefaultModel() string { return p.cfg.Model }

var _ agentloop.DefaultModeler = (*Provider)(nil)
