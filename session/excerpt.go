package session

import (
	"strconv"
	"unicode/utf8"
)

// Excerpt returns s bounded to n bytes, cut on a rune boundary and marked
// with how many bytes were left out. Text from outside (a model's tool
// arguments, a plugin's reason) is quoted through it in errors, log lines
// and the messages of records, which must not grow with that text.
func Excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…(+" + strconv.Itoa(len(s)-n) + " bytes)"
}
