package providerhttp

import (
	"html"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// minKeyPart is the shortest part of a key scrubbed at a cut: shorter
// ones are too likely to be ordinary text, and too short to be of use.
const minKeyPart = 8

// redacted replaces a key, or part of one, in error text.
const redacted = "[redacted]"

// redact returns s with every occurrence of key replaced by [redacted],
// however s breaks it: an error page may wrap the key across lines,
// split it with markup (<br>, </span><span>), spell its characters as
// HTML entities (&#115;) or JSON escapes (\u0073), or put invisible
// characters in it (&shy;, a zero-width space). The key is searched for
// in the text's characters with those breaks left out, and what it spans
// in s, breaks included, is replaced. With edges, what a cut may have
// left of key at either edge of s is replaced too: a prefix of minKeyPart
// or more characters at the end, a suffix at the start.
func redact(s, key string, edges bool) string {
	if key == "" || s == "" {
		return s
	}
	t := readable(s)
	var spans [][2]int
	for from := 0; ; {
		i := strings.Index(t.text[from:], key)
		if i < 0 {
			break
		}
		i += from
		spans = append(spans, t.span(i, i+len(key)))
		from = i + len(key)
	}
	if edges {
		for n := min(len(key)-1, len(t.text)); n >= minKeyPart; n-- {
			if strings.HasSuffix(t.text, key[:n]) {
				spans = append(spans, t.span(len(t.text)-n, len(t.text)))
				break
			}
		}
		for n := min(len(key)-1, len(t.text)); n >= minKeyPart; n-- {
			if strings.HasPrefix(t.text, key[len(key)-n:]) {
				spans = append([][2]int{t.span(0, n)}, spans...)
				break
			}
		}
	}
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	end := 0
	for _, sp := range spans {
		if sp[0] < end {
			// An edge that overlaps a whole key already replaced.
			sp[0] = end
		}
		if sp[1] <= sp[0] {
			continue
		}
		b.WriteString(s[end:sp[0]])
		b.WriteString(redacted)
		end = sp[1]
	}
	b.WriteString(s[end:])
	return b.String()
}

// readableText is the characters of a text without what can break a key
// in it, each byte mapped back to the bytes of the text it came from.
type readableText struct {
	text       string
	b          strings.Builder
	start, end []int // per byte of text: the span in the original
}

// span returns the span of the original that bytes [i, j) of text came
// from.
func (t *readableText) span(i, j int) [2]int { return [2]int{t.start[i], t.end[j-1]} }

func (t *readableText) add(r rune, start, end int) {
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	t.b.Write(buf[:n])
	for range n {
		t.start = append(t.start, start)
		t.end = append(t.end, end)
	}
}

// readable reads s as a key would be read from it: whitespace, markup
// and invisible characters left out, HTML entities and JSON escapes
// decoded.
func readable(s string) *readableText {
	t := &readableText{}
	t.b.Grow(len(s))
	for i := 0; i < len(s); {
		runes, n := readOne(s[i:])
		for _, r := range runes {
			if !invisible(r) {
				t.add(r, i, i+n)
			}
		}
		i += n
	}
	t.text = t.b.String()
	return t
}

// readOne reads the characters at the start of s: a tag (none), an entity
// or escape (what it stands for), else one character. It returns how many
// bytes it read.
func readOne(s string) ([]rune, int) {
	switch s[0] {
	case '<':
		// A tag starts with a letter, / or !; it is not text.
		if len(s) > 1 && (isLetter(s[1]) || s[1] == '/' || s[1] == '!') {
			if j := strings.IndexByte(s[:min(len(s), 512)], '>'); j > 0 {
				return nil, j + 1
			}
		}
	case '&':
		if j := strings.IndexByte(s[:min(len(s), 32)], ';'); j > 1 {
			if d := html.UnescapeString(s[:j+1]); d != s[:j+1] {
				return []rune(d), j + 1
			}
		}
	case '\\':
		if r, n, ok := jsonEscape(s); ok {
			return []rune{r}, n
		}
	}
	r, n := utf8.DecodeRuneInString(s)
	return []rune{r}, n
}

// jsonEscape decodes the JSON escape at the start of s.
func jsonEscape(s string) (rune, int, bool) {
	if len(s) < 2 {
		return 0, 0, false
	}
	switch s[1] {
	case 'n', 'r', 't', 'f', 'b':
		return ' ', 2, true
	case '/', '\\', '"':
		return rune(s[1]), 2, true
	case 'u':
		if len(s) >= 6 {
			if v, err := strconv.ParseUint(s[2:6], 16, 16); err == nil {
				return rune(v), 6, true
			}
		}
	}
	return 0, 0, false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// invisible reports whether r leaves no mark in a key: whitespace, a soft
// hyphen, a zero-width character, a control character.
func invisible(r rune) bool {
	switch r {
	case '\u00ad', '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff':
		return true
	}
	return unicode.IsSpace(r) || unicode.IsControl(r)
}
