package providertest

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/vigil-run/vigil/agentloop"
)

// Recorder is a server that answers every request with the same reply
// and keeps what it received: the server of a property test, which sends
// as many requests as it draws, through a provider and through the
// official SDK it is held to.
type Recorder struct {
	*httptest.Server
	mu    sync.Mutex
	reqs  []Request
	reply []byte
}

// NewRecorder starts a recorder that answers with server-sent events
// (none until [Recorder.Answer]); it is closed when the test ends.
func NewRecorder(t testing.TB) *Recorder {
	r := &Recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, Request{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: body})
		reply := r.reply
		r.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(reply)
	}))
	t.Cleanup(r.Close)
	return r
}

// Answer sets the body of the reply to every later request.
func (r *Recorder) Answer(body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reply = body
}

// Last returns the last request received.
func (r *Recorder) Last(t require.TestingT) Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.reqs)
	return r.reqs[len(r.reqs)-1]
}

// AssertSameRequest asserts that got is the request want (the official
// SDK's) was: the same method, path, content headers, credential and API
// version, and the same JSON text: key order, escapes and number
// spellings, whitespace aside (as [Golden] compares).
func AssertSameRequest(t require.TestingT, want, got Request) {
	assert.Equal(t, want.Method, got.Method)
	assert.Equal(t, want.Path, got.Path)
	for _, h := range []string{"Authorization", "X-Api-Key", "Content-Type", "Accept", "Anthropic-Version"} {
		assert.Equal(t, want.Header.Values(h), got.Header.Values(h), h)
	}
	assert.Equal(t, indent(t, want.Body), indent(t, got.Body))
}

func indent(t require.TestingT, b []byte) string {
	var buf bytes.Buffer
	require.NoError(t, json.Indent(&buf, b, "", "  "), "%s", b)
	return buf.String()
}

// WithoutGoType cuts the Go type out of a JSON decoding error's text: the
// SDK decodes into its types, a provider into its own.
func WithoutGoType(s string) string {
	if i := strings.Index(s, " of type "); i >= 0 && strings.Contains(s, "json: cannot unmarshal") {
		return s[:i]
	}
	return s
}

// odd are JSON values of every type, for a server that sends a field as
// another type than the API's.
var odd = []any{json.RawMessage("\"\xfc\\u00e9\\ud800x\\\\\""), json.RawMessage("5"), json.RawMessage("-1.5"), json.RawMessage("1e400"), json.RawMessage("12345678901234567890"), "7", "x", "", true, false, nil, map[string]any{"a": 1}, []any{1, "b"}, []any{}}

// Perturb replaces now and then a value inside v (v itself included) by
// one of another JSON type: what a server that strays from an API's
// types sends. v is built of maps and slices, as json.Unmarshal makes it.
func Perturb(t *rapid.T, v any) any {
	if rapid.IntRange(0, 24).Draw(t, "perturb") == 0 {
		return rapid.SampledFrom(odd).Draw(t, "odd")
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			x[k] = Perturb(t, x[k])
		}
	case []any:
		for i, e := range x {
			x[i] = Perturb(t, e)
		}
	}
	return v
}

// AssertSameReading answers the next requests with stream and requires
// that ours reads req's reply as sdk, the official SDK's client, does:
// the same chunks, or the same error (message, status, retryability).
func AssertSameReading(t require.TestingT, srv *Recorder, ours, sdk agentloop.Provider, req func() *agentloop.Request, stream []byte) {
	srv.Answer(stream)
	want, wantErr := Run(sdk, req())
	got, err := Run(ours, req())
	assert.Equal(t, want, got, "%s", stream)
	if wantErr == nil {
		assert.NoError(t, err, "%s", stream)
		return
	}
	require.Error(t, err, "the SDK's reading failed: %v\n%s", wantErr, stream)
	assert.Equal(t, WithoutGoType(wantErr.Error()), WithoutGoType(err.Error()))
	var pe, wantPE *agentloop.ProviderError
	require.ErrorAs(t, err, &pe)
	require.ErrorAs(t, wantErr, &wantPE)
	assert.Equal(t, wantPE.Retryable, pe.Retryable)
	assert.Equal(t, wantPE.Status, pe.Status)
}

// CheckRecordedStreams runs [AssertSameReading] on every testdata/*.sse
// file of the calling package's folder.
func CheckRecordedStreams(t *testing.T, srv *Recorder, ours, sdk agentloop.Provider, req func() *agentloop.Request) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.sse"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			b, err := os.ReadFile(name)
			require.NoError(t, err)
			AssertSameReading(t, srv, ours, sdk, req, b)
		})
	}
}

// CheckRequestsForAnyConversation requires, for every request draw
// draws, that ours sends the JSON text sdk sends (answered with reply),
// or refuses a request sdk refuses.
func CheckRequestsForAnyConversation(t *testing.T, srv *Recorder, ours, sdk agentloop.Provider, reply []byte, draw func(*rapid.T) *agentloop.Request) {
	srv.Answer(reply)
	rapid.Check(t, func(t *rapid.T) {
		req := draw(t)
		_, sdkErr := Run(sdk, req)
		want := srv.Last(t)
		_, err := Run(ours, req)
		if sdkErr != nil {
			require.Error(t, err, "the SDK refused the request: %v", sdkErr)
			return
		}
		require.NoError(t, err)
		AssertSameRequest(t, want, srv.Last(t))
	})
}

// Sent runs req through p and returns the request srv received.
func Sent(t require.TestingT, srv *Recorder, p agentloop.Provider, req *agentloop.Request) Request {
	_, err := Run(p, req)
	require.NoError(t, err)
	return srv.Last(t)
}

// Tricky are strings that JSON encoders disagree on.
var Tricky = []string{"", "plain", "<b>&amp;</b>", "\u2028\u2029", "\x00\x01\x7f", "\xff\xfe", "é😀", `"quoted" \ back\slash`, "line\nbreak\r\n", "</script>"}

// DrawText draws a string encoders disagree on, or any string.
func DrawText(t *rapid.T, label string) string {
	return rapid.OneOf(rapid.SampledFrom(Tricky), rapid.String()).Draw(t, label)
}

// Schemas are tool parameter schemas as tools declare them: none, null,
// spaced out, strict.
var Schemas = []string{"", "null", `{}`, `{"type":"object"}`, ` { "type" : "object", "properties" : { "a" : { "type" : "string" } } } `,
	`{"type":"object","properties":{"a":{"type":"string","description":"<&>"}},"required":["a"],"additionalProperties":false}`}
