package providerhttp

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLogHostIsTheHostOnly(t *testing.T) {
	for base, want := range map[string]string{
		"": "api.example.com",
		"https://user:secret@h.example:8443/v1?key=k": "h.example:8443",
		"http://127.0.0.1:11434/v1":                   "127.0.0.1:11434",
		"%zz":                                         "",
	} {
		assert.Equal(t, want, LogHost(base, "https://api.example.com/v1"), base)
	}
}

func TestClientOfDefaultsAndKeepsTheGivenClient(t *testing.T) {
	mine := &http.Client{}
	assert.Same(t, mine, ClientOf([]Option{WithHTTPClient(mine)}))
	def := ClientOf(nil)
	assert.NotSame(t, mine, def)
	tr, ok := def.Transport.(*http.Transport)
	if assert.True(t, ok) {
		assert.Equal(t, headerTimeout, tr.ResponseHeaderTimeout)
	}
}
