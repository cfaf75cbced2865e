package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// termSafe returns s with what a terminal would act on instead of show
// written as Go escapes it: control characters but newline and tab (ESC
// becomes \x1b, CR \r, the C1 CSI \u009b), the bidirectional overrides
// that reorder a line (\u202e), and bytes that are not UTF-8 (\xff).
// Every text from outside (a prompt, a model's words, an approval's by
// and reason, a tool's or MCP server's error) goes through it on its way
// to a terminal, so that it cannot move the cursor, clear the screen, set
// the title or hide what follows. Output meant for a program (the answer
// of vigil run on a pipe, --json) is not passed through it.
func termSafe(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports whether a terminal would act on r.
func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// termWriter passes everything written to it through termSafe: a
// listing for people writes through one, whatever it prints.
type termWriter struct{ w io.Writer }

func (t termWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, termSafe(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
