package providerhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Endpoint is the one URL a provider posts its requests to, with the
// headers every request carries, through [CheckStatus] and [Bound].
type Endpoint struct {
	url    string
	header http.Header
	do     func(*http.Request) (*http.Response, error)
}

// NewEndpoint returns the endpoint at path under base (def when base is
// empty), resolved as the official SDKs resolve it: a base path gets a
// trailing slash, and path is relative to it. header is sent with every
// request; key is scrubbed from error messages; limits bound every
// response.
func NewEndpoint(base, def, path string, header http.Header, key string, limits Limits, opts []Option) (*Endpoint, error) {
	if base == "" {
		base = def
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("base_url: %w", err)
	}
	if u.Path != "" && !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	target, err := u.Parse(path)
	if err != nil {
		return nil, fmt.Errorf("base_url: %w", err)
	}
	client := ClientOf(opts)
	check, bound := CheckStatus(key), Bound(limits, LoggerOf(opts))
	do := func(req *http.Request) (*http.Response, error) {
		return check(req, func(req *http.Request) (*http.Response, error) {
			return bound(req, client.Do)
		})
	}
	return &Endpoint{url: target.String(), header: header, do: do}, nil
}

// Post sends body as JSON. A response with an error status is returned
// as an error (see [CheckStatus]); any other response is the caller's to
// read and close.
func (e *Endpoint) Post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range e.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Content-Type", "application/json")
	return e.do(req)
}

// Marshal encodes v as JSON without a trailing newline; html says
// whether <, > and & are escaped, as encoding/json escapes them by
// default (the Anthropic SDK does, the OpenAI SDK does not).
func Marshal(v any, html bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
