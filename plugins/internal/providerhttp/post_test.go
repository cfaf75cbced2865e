package providerhttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEndpointResolvesPathUnderTheBase(t *testing.T) {
	for base, want := range map[string]string{
		"":                          "https://api.example.com/v1/chat/completions",
		"http://h:1":                "http://h:1/chat/completions",
		"http://h:1/":               "http://h:1/chat/completions",
		"http://h:1/v1":             "http://h:1/v1/chat/completions",
		"http://h:1/v1/":            "http://h:1/v1/chat/completions",
		"http://h:1/proxy/v1?key=k": "http://h:1/proxy/v1/chat/completions",
	} {
		e, err := NewEndpoint(base, "https://api.example.com/v1", "chat/completions", nil, "", Limits{}, nil)
		require.NoError(t, err)
		assert.Equal(t, want, e.url, base)
	}
}

func TestEndpointPostsJSONWithItsHeadersAndReadsErrorStatuses(t *testing.T) {
	const key = "sk-0123456789abcdef"
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, body = r, must(io.ReadAll(r.Body))
		if r.URL.Query().Get("fail") != "" {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"slow down `+key+`"}}`)
			return
		}
		_, _ = io.WriteString(w, "data: ok\n\n")
	}))
	defer srv.Close()
	e, err := NewEndpoint(srv.URL, "", "v1/messages", http.Header{"X-Version": {"1"}}, key, Limits{}, []Option{WithHTTPClient(srv.Client())})
	require.NoError(t, err)
	res, err := e.Post(context.Background(), []byte(`{"a":1}`))
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	assert.Equal(t, "data: ok\n\n", string(b))
	assert.Equal(t, http.MethodPost, got.Method)
	assert.Equal(t, "/v1/messages", got.URL.Path)
	assert.Equal(t, "application/json", got.Header.Get("Content-Type"))
	assert.Equal(t, "1", got.Header.Get("X-Version"))
	assert.JSONEq(t, `{"a":1}`, string(body))

	e.url += "?fail=1"
	_, err = e.Post(context.Background(), nil)
	var se *statusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusTooManyRequests, se.Code)
	assert.Equal(t, "slow down [redacted]", se.Msg)
	assert.Equal(t, "3", se.Header.Get("Retry-After"))
}

func TestMarshalEscapesMarkupOnlyWhenAsked(t *testing.T) {
	v := map[string]string{"s": "<a&b>"}
	b, err := Marshal(v, true)
	require.NoError(t, err)
	assert.Equal(t, `{"s":"\u003ca\u0026b\u003e"}`, string(b))
	b, err = Marshal(v, false)
	require.NoError(t, err)
	assert.Equal(t, `{"s":"<a&b>"}`, string(b))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
