package openai

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
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return providertest.Reply{Status: status, Header: h, Body: []byte(body)}
}

const rateLimitBody = `{"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min (TPM): Limit 200000, Used 199950, Requested 320. Please try again in 81ms.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`

func TestRateLimitIsRetryableWithRetryAfterThenSucceeds(t *testing.T) {
	srv := providertest.NewServer(t,
		jsonReply(http.StatusTooManyRequests, rateLimitBody, "Retry-After", "7"),
		sse(t, "text"),
	)
	p := newProvider(t, srv)

	_, err := p.Stream(context.Background(), simpleRequest())
	var pe *agentloop.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, http.StatusTooManyRequests, pe.Status)
	assert.True(t, pe.Retryable)
	assert.Equal(t, 7*time.Second, pe.RetryAfter)
	assert.Contains(t, err.Error(), "Rate limit reached")
	assert.Len(t, srv.Requests(), 1, "the SDK must not retry on its own")

	// The loop retries; the second attempt streams normally.
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
		{"server error", jsonReply(500, `{"error":{"message":"The server had an error processing your request.","type":"server_error","param":null,"code":null}}`), 500, true, 0, "The server had an error"},
		{"overloaded with retry-after-ms", jsonReply(503, `{"error":{"message":"The engine is currently overloaded.","type":"server_error"}}`, "Retry-After-Ms", "1500", "Retry-After", "2"), 503, true, 1500 * time.Millisecond, "overloaded"},
		{"bad gateway without a JSON body", providertest.Reply{Status: 502, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<html>502 Bad Gateway</html>")}, 502, true, 0, "Bad Gateway: <html>502 Bad Gateway</html>"},
		{"bad request", jsonReply(400, `{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`), 400, false, 0, "Invalid value for 'temperature'"},
		{"ollama's string error", jsonReply(404, `{"error":"model \"llama9\" not found, try pulling it first"}`), 404, false, 0, `model "llama9" not found`},
		{"vllm's flat error", jsonReply(400, `{"object":"error","message":"This model's maximum context length is 8192 tokens.","type":"BadRequestError","param":null,"code":400}`), 400, false, 0, "maximum context length is 8192"},
		{"unknown model", jsonReply(404, `{"error":{"message":"The model 'gpt-9' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`), 404, false, 0, "does not exist"},
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
	echo := `{"error":{"message":"Incorrect API key provided: ` + testKey + `.","type":"invalid_request_error","code":"invalid_api_key"}}`
	tests := []struct {
		name  string
		reply providertest.Reply
	}{
		{"status error", jsonReply(http.StatusUnauthorized, echo)},
		{"error event", providertest.Reply{Body: []byte("data: " + echo + "\n\n")}},
		{"plain text body", providertest.Reply{Status: 500, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("upstream rejected Bearer " + testKey)}},
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
			assert.Equal(t, "Bearer "+testKey, srv.Requests()[0].Header.Get("Authorization"))
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
			assert.Equal(t, "Bearer "+testKey, srv.Requests()[0].Header.Get("Authorization"))
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
	serverError := `{"error":{"message":"The server had an error.","type":"server_error"}}`
	badRequest := `{"error":{"message":"Conflict, try again.","type":"invalid_request_error"}}`
	tests := []struct {
		name     string
		replies  func(t *testing.T) []providertest.Reply
		attempts int
		reason   string
	}{
		{"server error is retried up to the limit", func(t *testing.T) []providertest.Reply {
			r := jsonReply(500, serverError)
			return []providertest.Reply{r, r, r, r}
		}, agentloop.DefaultMaxAttempts, "error"},
		{"x-should-retry false stops a server error", func(t *testing.T) []providertest.Reply {
			return []providertest.Reply{jsonReply(500, serverError, "X-Should-Retry", "false")}
		}, 1, "error"},
		{"x-should-retry false stops a rate limit", func(t *testing.T) []providertest.Reply {
			return []providertest.Reply{jsonReply(429, rateLimitBody, "X-Should-Retry", "false")}
		}, 1, "error"},
		{"a client error is not retried", func(t *testing.T) []providertest.Reply {
			return []providertest.Reply{jsonReply(409, badRequest)}
		}, 1, "error"},
		{"x-should-retry true retries a client error", func(t *testing.T) []providertest.Reply {
			return []providertest.Reply{jsonReply(409, badRequest, "X-Should-Retry", "true"), sse(t, "text")}
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
