package main

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, é and 日本", "plain text, é and 日本"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"\x1b[2J\x1b]0;title\x07", `\x1b[2J\x1b]0;title\a`},
		{"over\rwrite\b", `over\rwrite\b`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`},
		{"bidi \u202eevil", `bidi \u202eevil`},
		{"bad \xff byte", `bad \xff byte`},
		{"replacement \uFFFD kept", "replacement \uFFFD kept"},
	} {
		assert.Equal(t, tc.want, termSafe(tc.in), "%q", tc.in)
	}
}

func FuzzTermSafe(f *testing.F) {
	f.Add("\x1b[31mred\x1b[0m\r\n\xff")
	f.Fuzz(func(t *testing.T, s string) {
		out := termSafe(s)
		assert.True(t, utf8.ValidString(out), "%q gave %q", s, out)
		for _, r := range out {
			assert.False(t, unsafeRune(r), "%q left %q", s, r)
		}
		if termSafe(out) != out {
			t.Fatalf("not idempotent on %q", s)
		}
	})
}
