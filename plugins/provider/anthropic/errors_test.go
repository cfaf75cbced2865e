package anthropic

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
)

func jsonReply(status int, body string, header ...string) providertest.Reply {
	h := http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_011CSHoEeqs5C35K2UUqR7Fy"}}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return providertest.Reply{Status: status, Header: h, Body: []byte(body)}
}

const rateLimitBody = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50,000 input tokens per minute."},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`

func TestRateLimitIsRetryableWithRetryAfterThenSucceeds(t *testing.T) {
	srv := providertest.NewServer(t,
		jsonReply(http.StatusTooManyRequests, rateLimitBody, "Retry-After", "12"),
		sse(t, "text"),
	)
	p := newProvider(t, srv)

	_, err := p.Stream(context.Background(), simpleRequest())
	var pe *agentloop.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, http.StatusTooManyRequests, pe.Status)
	assert.True(t, pe.Retryable)
	assert.Equal(t, 12*time.Second, pe.RetryAfter)
	assert.Contains(t, err.Error(), "would exceed the rate limit")
	assert.Len(t, srv.Requests(), 1, "the SDK must not retry on its own")

	s, err := p.Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	chunks, err := providertest.Collect(s)
	require.NoError(t, err)
	assert.Equal(t, "stop", providertest.Assemble(chunks).Finish)
	assert.Len(t, srv.Requests(), 2)
}

func TestHTTPStatusErrors(t *testing.T) {
	tests := []struct {
		name      string
		reply     providertest.Reply
		status    int
		retryable bool
		after     time.Duration
		message   string
	}{
		{"internal error", jsonReply(500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`), 500, true, 0, "Internal server error"},
		{"overloaded", jsonReply(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "Retry-After", "3"), 529, true, 3 * time.Second, "Overloaded"},
		{"gateway page", providertest.Reply{Status: 502, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<html>502</html>")}, 502, true, 0, "Bad Gateway: <html>502</html>"},
		{"invalid request", jsonReply(400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must be non-empty"}}`), 400, false, 0, "text content blocks must be non-empty"},
		{"proxy's flat error", jsonReply(403, `{"error":"key not allowed for this model"}`), 403, false, 0, "key not allowed for this model"},
		{"unknown model", jsonReply(404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`), 404, false, 0, "model: claude-9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.NewServer(t, tt.reply)
			_, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
			var pe *agentloop.ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.status, pe.Status)
			assert.Equal(t, tt.retryable, pe.Retryable)
			assert.Equal(t, tt.after, pe.RetryAfter)
			assert.Contains(t, err.Error(), tt.message)
			assert.Len(t, srv.Requests(), 1)
		})
	}
}

func TestConnectionRefusedIsRetryable(t *testing.T) {
	srv := providertest.NewServer(t)
	p := newProvider(t, srv)
	srv.Close()
	_, err := p.Stream(context.Background(), simpleRequest())
	var pe *agentloop.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Zero(t, pe.Status)
	assert.True(t, pe.Retryable)
}

func TestAPIKeyNeverAppearsInErrors(t *testing.T) {
	// A misbehaving proxy that echoes the credentials it was sent.
	echo := `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + testKey + `"}}`
	tests := []struct {
		name  string
		reply providertest.Reply
	}{
		{"status error", jsonReply(http.StatusUnauthorized, echo)},
		{"error event", providertest.Reply{Body: []byte(string(fixture(t, "held")) + "event: error\ndata: " + echo + "\n\n")}},
		{"plain text body", providertest.Reply{Status: 500, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("upstream rejected " + testKey)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.NewServer(t, tt.reply)
			s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
			if err == nil {
				_, err = providertest.Collect(s)
			}
			require.Error(t, err)
			assert.NotContains(t, err.Error(), testKey)
			assert.Contains(t, err.Error(), "[redacted]", "the echo reached the error, scrubbed")
			// The request did carry the key, so the test can fail.
			h := srv.Requests()[0].Header
			assert.Contains(t, h.Get("Authorization")+h.Get("X-Api-Key"), testKey)
		})
	}
}

// TestNoPartOfTheKeyLeaksThroughAnHTMLErrorPage puts the echoed key at
// offsets around the 200-character cut of a non-JSON body's excerpt.
func TestNoPartOfTheKeyLeaksThroughAnHTMLErrorPage(t *testing.T) {
	const cut = 200
	n := len(testKey)
	tests := []struct {
		name   string
		offset int
	}{
		{"well before the cut", 100},
		{"ending at the cut", cut - n},
		{"one past the cut", cut - n + 1},
		{"half across the cut", cut - n/2},
		{"nine before the cut", cut - 9},
		{"eight before the cut", cut - 8},
		{"seven before the cut", cut - 7},
		{"one before the cut", cut - 1},
		{"at the cut", cut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.EchoPage(t, http.StatusUnauthorized, testKey, tt.offset))
			turn := providertest.RunTurn(t, newProvider(t, srv), "hi")
			require.Error(t, turn.Err)
			assert.Contains(t, turn.Err.Error(), "Unauthorized: <html>", "the page's excerpt reached the error")
			providertest.AssertNoKeyPart(t, turn.Err.Error(), testKey)
			assert.Contains(t, turn.Log, `"type":"turn/end"`)
			providertest.AssertNoKeyPart(t, turn.Log, testKey)
			// The request did carry the key, so the test can fail.
			h := srv.Requests()[0].Header
			assert.Contains(t, h.Get("Authorization")+h.Get("X-Api-Key"), testKey)
		})
	}
}

// An error page that breaks the key it echoes (a line break, markup, an
// entity) leaks no part of it.
func TestErrorPageBreakingTheKeyLeaksNoPartOfIt(t *testing.T) {
	for name, brk := range providertest.Breaks {
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.BrokenKeyPage(http.StatusUnauthorized, testKey, brk))
			turn := providertest.RunTurn(t, newProvider(t, srv), "hi")
			require.Error(t, turn.Err)
			assert.Contains(t, turn.Err.Error(), "Invalid token: Bearer ")
			assert.Contains(t, turn.Err.Error(), "[redacted]")
			providertest.AssertNoKeyPart(t, turn.Err.Error(), testKey)
			providertest.AssertNoKeyPart(t, turn.Log, testKey)
		})
	}
}

// TestXShouldRetryOverridesTheStatus counts the attempts the agent loop
// makes against a server that says whether to retry.
func TestXShouldRetryOverridesTheStatus(t *testing.T) {
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	conflict := `{"type":"error","error":{"type":"invalid_request_error","message":"Conflict, try again."}}`
	tests := []struct {
		name     string
		replies  func(t *testing.T) []providertest.Reply
		attempts int
		reason   string
	}{
		{"overloaded is retried up to the limit", func(t *testing.T) []providertest.Reply {
			r := jsonReply(529, overloaded)
			return []providertest.Reply{r, r, r, r}
		}, agentloop.DefaultMaxAttempts, "error"},
		{"x-should-retry false stops an overload", func(t *testing.T) []providertest.Reply {
			return []providertest.Reply{jsonReply(529, overloaded, "X-Should-Retry", "false")}
		}, 1, "error"},
		{"x-should-retry false stops a rate limit", func(t *testing.T) []providertest.Reply {
			return []providertest.Reply{jsonReply(429, rateLimitBody, "X-Should-Retry", "false")}
		}, 1, "error"},
		{"a client error is not retried", func(t *testing.T) []providertest.Reply {
			return []providertest.Reply{jsonReply(409, conflict)}
		}, 1, "error"},
		{"x-should-retry true retries a client error", func(t *testing.T) []providertest.Reply {
			return []providertest.Reply{jsonReply(409, conflict, "X-Should-Retry", "true"), sse(t, "text")}
		}, 2, "completed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.NewServer(t, tt.replies(t)...)
			turn := providertest.RunTurn(t, newProvider(t, srv), "hi")
			require.NotNil(t, turn.Result, "the turn ran: %v", turn.Err)
			assert.Equal(t, tt.reason, turn.Result.Reason)
			assert.Len(t, srv.Requests(), tt.attempts)
		})
	}
}
