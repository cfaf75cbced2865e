package session_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-run/vigil/session"
)

func TestExcerptBoundsTextOnARuneBoundary(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven byte", 10, "eleven byt…(+1 bytes)"},
		{"naïve", 3, "na…(+4 bytes)"}, // ï is two bytes: the cut goes before it
		{"abc", 0, "…(+3 bytes)"},
		{"abc", -1, "…(+3 bytes)"},
		{strings.Repeat("x", 10<<20), 4, "xxxx…(+10485756 bytes)"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, session.Excerpt(tt.s, tt.n), "%.20q %d", tt.s, tt.n)
	}
}
