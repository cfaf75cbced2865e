package providerhttp

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// headerTimeout bounds the wait for response headers; the body of a
// stream may take much longer.
const headerTimeout = 10 * time.Minute

// DefaultClient is the client a provider sends requests with unless told
// otherwise: the default transport with a response-header timeout and no
// overall timeout, since a stream may legitimately run for minutes.
func DefaultClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = headerTimeout
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: http.DefaultTransport}
}

// CheckBaseURL reports why raw cannot be a provider's base URL: it must
// be an absolute http or https URL with a host, and a port, if the colon
// is there, of 1 to 65535 (Go would dial "host:" on the scheme's default
// port, which is never what was meant). The URL is not echoed: someone
// may have put the key in it.
func CheckBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return errors.New("base_url must be an http or https URL")
	}
	if strings.HasSuffix(u.Host, ":") {
		return errors.New("base_url has a colon but no port after the host; give a port or drop the colon")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errors.New("base_url's port must be between 1 and 65535")
		}
	}
	return nil
}

// Option configures the HTTP side of a provider; each provider package
// exposes it as its own Option.
type Option func(*options)

type options struct {
	client *http.Client
	log    hclog.Logger
}

// WithHTTPClient sets the HTTP client requests are sent with.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) { o.client = c }
}

// WithLogger sets the logger a provider logs the responses it ends with
// (see [Bound]); the provider plugins pass their own.
func WithLogger(l hclog.Logger) Option {
	return func(o *options) { o.log = l }
}

func optionsOf(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// ClientOf returns the client opts name, else [DefaultClient].
func ClientOf(opts []Option) *http.Client {
	if c := optionsOf(opts).client; c != nil {
		return c
	}
	return DefaultClient()
}

// LoggerOf returns the logger opts name, else nil.
func LoggerOf(opts []Option) hclog.Logger { return optionsOf(opts).log }

// LogHost returns the host of base (def when base is empty), the part of
// a base URL that is safe to log.
func LogHost(base, def string) string {
	if base == "" {
		base = def
	}
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return u.Host
}
