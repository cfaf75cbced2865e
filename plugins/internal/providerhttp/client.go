package providerhttp

import (
	"net/http"
	"time"
)

// HeaderTimeout bounds the wait for response headers; the body of a
// stream may take much longer.
const HeaderTimeout = 10 * time.Minute

// DefaultClient is the client a provider sends requests with unless told
// otherwise: the default transport with a response-header timeout and no
// overall timeout, since a stream may legitimately run for minutes.
func DefaultClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = HeaderTimeout
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: http.DefaultTransport}
}
