package providerhttp

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRetryAfter(t *testing.T) {
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name   string
		header http.Header
		min    time.Duration
		max    time.Duration
	}{
		{"absent", http.Header{}, 0, 0},
		{"seconds", http.Header{"Retry-After": {"20"}}, 20 * time.Second, 20 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, 500 * time.Millisecond},
		{"milliseconds win", http.Header{"Retry-After-Ms": {"81"}, "Retry-After": {"1"}}, 81 * time.Millisecond, 81 * time.Millisecond},
		{"http date", http.Header{"Retry-After": {future}}, 80 * time.Second, 91 * time.Second},
		{"date in the past", http.Header{"Retry-After": {"Sun, 06 Nov 1994 08:49:37 GMT"}}, 0, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := retryAfter(tt.header)
			assert.GreaterOrEqual(t, got, tt.min)
			assert.LessOrEqual(t, got, tt.max)
		})
	}
}

func TestErrorMessageReadsEveryShape(t *testing.T) {
	tests := []struct {
		name string
		code int
		body string
		want string
	}{
		{"openai", 400, `{"error":{"message":"bad model","type":"invalid_request_error"}}`, "bad model"},
		{"anthropic", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "Overloaded"},
		{"ollama", 404, `{"error":"model 'x' not found"}`, "model 'x' not found"},
		{"vllm", 400, `{"message":"too long"}`, "too long"},
		{"detail", 422, `{"detail":"missing field"}`, "missing field"},
		{"proxy page", 502, "<html>\n<b>Bad   gateway</b></html>", "Bad Gateway: <html> <b>Bad gateway</b></html>"},
		{"empty", 503, "", "Service Unavailable"},
		{"unknown status", 599, "", "status 599"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, errorMessage(tt.code, []byte(tt.body), ""))
		})
	}
}

func TestScrubKeepsTheCauseAndDropsTheKey(t *testing.T) {
	cause := errors.New("auth failed for sk-secret")
	err := scrub(cause, "sk-secret")
	assert.Equal(t, "auth failed for [redacted]", err.Error())
	assert.ErrorIs(t, err, cause)
	assert.Same(t, cause, scrub(cause, ""))
}

func TestErrorMessageLeavesNoPartOfTheKey(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	tests := []struct {
		name string
		body string
		want string
	}{
		{"json message", `{"error":{"message":"bad key ` + key + `"}}`, "bad key [redacted]"},
		{"json escapes hide the key from the raw scrub", `{"error":{"message":"bad key \u0073k-live-0123456789abcdef"}}`, "bad key [redacted]"},
		{"page cut by the read limit inside the key", "<p>Bearer " + key[:10], "Unauthorized: <p>Bearer [redacted]"},
		{"page starting inside the key", key[5:] + " rejected", "Unauthorized: [redacted] rejected"},
		{"seven characters are ordinary text", "<p>sk-live", "Unauthorized: <p>sk-live"},
		{"a line break", "<p>Bearer sk-live-01234\n56789abcdef</p>", "Unauthorized: <p>Bearer [redacted]</p>"},
		{"a CRLF and an indent", "<p>Bearer sk-live-01234\r\n    56789abcdef</p>", "Unauthorized: <p>Bearer [redacted]</p>"},
		{"a <br>", "<p>Bearer sk-live-01234<br/>56789abcdef</p>", "Unauthorized: <p>Bearer [redacted]</p>"},
		{"spans", "<p>Bearer <span>sk-live-01234</span><span class=k>56789abcdef</span></p>", "Unauthorized: <p>Bearer <span>[redacted]</span></p>"},
		{"a comment", "<p>Bearer sk-live-01234<!-- wrap -->56789abcdef</p>", "Unauthorized: <p>Bearer [redacted]</p>"},
		{"entities", "<p>Bearer sk&#45;live-01234&shy;5678&#x39;abcdef</p>", "Unauthorized: <p>Bearer [redacted]</p>"},
		{"a no-break space", "<p>Bearer sk-live-01234&nbsp;56789abcdef</p>", "Unauthorized: <p>Bearer [redacted]</p>"},
		{"a zero-width space", "<p>Bearer sk-live-01234\u200b56789abcdef</p>", "Unauthorized: <p>Bearer [redacted]</p>"},
		{"a JSON message with a line break", `{"error":{"message":"bad key sk-live-01234\n56789abcdef"}}`, "bad key [redacted]"},
		{"a cut JSON body with an escaped line break", `{"error":{"message":"bad key sk-live-01234\n5678`, `Unauthorized: {"error":{"message":"bad key [redacted]`},
		{"the key twice, the text around it kept", "a sk-live-0123456789abcdef b sk-live-01234\n56789abcdef c", "Unauthorized: a [redacted] b [redacted] c"},
		{"less than a key across markup is text", "<p>sk-live</p><p>-01 ok</p>", "Unauthorized: <p>sk-live</p><p>-01 ok</p>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, errorMessage(http.StatusUnauthorized, []byte(tt.body), key))
		})
	}
}

func TestShouldRetry(t *testing.T) {
	tests := []struct {
		code   int
		header string // x-should-retry; empty means absent
		want   bool
	}{
		{500, "", true},
		{429, "", true},
		{400, "", false},
		{500, "false", false},
		{429, "false", false},
		{400, "true", true},
		{409, "True", true},
		{503, "maybe", true},
		{401, "maybe", false},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.header != "" {
			h.Set("X-Should-Retry", tt.header)
		}
		assert.Equal(t, tt.want, shouldRetry(tt.code, h), "%d with x-should-retry %q", tt.code, tt.header)
	}
}
