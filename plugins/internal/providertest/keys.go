package providertest

import (
	"net/http"
	"strings"
	"testing"
)

// EchoPage is a proxy's HTML error page that echoes the bearer token it
// was sent, with key starting at byte offset of the page's text once its
// whitespace is collapsed (as error excerpts collapse it). offset must
// leave room for the page's opening markup (at least 32).
func EchoPage(t testing.TB, status int, key string, offset int) Reply {
	t.Helper()
	const head, bearer = "<html><body><p>", " Bearer "
	pad := offset - len(head) - len(bearer)
	if pad < 1 {
		t.Fatalf("providertest: offset %d leaves no room for the page's markup", offset)
	}
	page := head + strings.Repeat("x", pad) + bearer + key + "</p>\n</body></html>\n"
	return Reply{Status: status, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(page)}
}

// keyPart is the shortest part of a key that must not appear in text.
const keyPart = 8

// AssertNoKeyPart fails the test if s contains keyPart (8) or more
// consecutive characters of key.
func AssertNoKeyPart(t testing.TB, s, key string) {
	t.Helper()
	for i := 0; i+keyPart <= len(key); i++ {
		if strings.Contains(s, key[i:i+keyPart]) {
			t.Errorf("text leaks %q of the key (offset %d): %s", key[i:i+keyPart], i, s)
			return
		}
	}
}
