package providertest

import (
	"net/http"
	"strconv"
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

// Breaks are ways an HTML error page may break a key it echoes: line
// breaks, markup, entities (one spelling a character of the key) and
// invisible characters.
var Breaks = map[string]func(left, right string) string{
	"a line break":         func(l, r string) string { return l + "\n" + r },
	"a CRLF":               func(l, r string) string { return l + "\r\n" + r },
	"a wrapped line":       func(l, r string) string { return l + "\n        " + r },
	"a <br>":               func(l, r string) string { return l + "<br>\n" + r },
	"spans":                func(l, r string) string { return "<span>" + l + "</span><span>" + r + "</span>" },
	"a soft hyphen entity": func(l, r string) string { return l + "&shy;" + r },
	"a numeric entity":     func(l, r string) string { return l + "&#" + strconv.Itoa(int(r[0])) + ";" + r[1:] },
	"a zero-width space":   func(l, r string) string { return l + "\u200b" + r },
}

// BrokenKeyPage is a proxy's HTML error page that echoes the bearer token
// it was sent, broken in its middle by brk (one of [Breaks]).
func BrokenKeyPage(status int, key string, brk func(left, right string) string) Reply {
	page := "<html><body><h1>401</h1><p>Invalid token: Bearer " + brk(key[:len(key)/2], key[len(key)/2:]) + "</p>\n</body></html>\n"
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
