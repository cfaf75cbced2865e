package providerhttp

import (
	"strings"
	"testing"
)

// FuzzRedactLeavesNoKey: whatever surrounds a key and however it is
// broken, what redact returns holds no key, read as redact reads text.
func FuzzRedactLeavesNoKey(f *testing.F) {
	const key = "sk-live-0123456789abcdef"
	f.Add("<p>Bearer ", "</p>", uint8(5), "\n")
	f.Add("", "", uint8(0), "")
	f.Add("&#", ";", uint8(12), "<br>")
	f.Add("\\u00", "\\", uint8(23), "&shy;")
	f.Add("sk-live-", "abcdef", uint8(9), "\r\n  ")
	f.Fuzz(func(t *testing.T, before, after string, at uint8, brk string) {
		i := int(at) % (len(key) + 1)
		s := before + key[:i] + brk + key[i:] + after
		out := redact(s, key, false)
		if strings.Contains(readable(out).text, key) {
			t.Fatalf("redact(%q) = %q, which still holds the key", s, out)
		}
		// A text without the key comes back as it was.
		if !strings.Contains(readable(before+after).text, key) && redact(before+after, key, false) != before+after {
			t.Fatalf("redact changed %q, which holds no key", before+after)
		}
	})
}
