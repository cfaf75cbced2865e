package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

func TestIdempotencyKey(t *testing.T) {
	for _, tc := range []struct {
		name, session, call, key string
	}{
		{"a provider's id", "01JD7Z3QK6B9F0M2V8XW4R5T1Y", "toolu_01A09q90qw90lq917835lq9", "01JD7Z3QK6B9F0M2V8XW4R5T1Y/toolu_01A09q90qw90lq917835lq9"},
		{"an id the loop made", "s1", "call_1_2_0", "s1/call_1_2_0"},
		{"a call id with a slash", "s1", "a/b", "s1/a/b"},
		{"a call id with spaces and unicode", "s-1_x", "call 1 é", "s-1_x/call 1 é"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := session.IdempotencyKey(tc.session, tc.call)
			assert.Equal(t, tc.key, key)
			s, c, ok := session.ParseIdempotencyKey(key)
			require.True(t, ok)
			assert.Equal(t, tc.session, s)
			assert.Equal(t, tc.call, c)
		})
	}
}

func TestParseIdempotencyKeyRefuses(t *testing.T) {
	for _, key := range []string{"", "s1", "s1/", "/call_1", "s 1/call_1", "s.1/call_1"} {
		_, _, ok := session.ParseIdempotencyKey(key)
		assert.False(t, ok, "%q", key)
	}
}

// FuzzIdempotencyKey: the key of a valid session id and a non-empty call
// id splits back into them, so two calls share a key only when they are
// the same call of the same session.
func FuzzIdempotencyKey(f *testing.F) {
	f.Add("s1", "call_1_1_0")
	f.Add("01JD7Z3QK6B9F0M2V8XW4R5T1Y", "a/b/c")
	f.Add("x", "/")
	f.Fuzz(func(t *testing.T, sessionID, callID string) {
		key := session.IdempotencyKey(sessionID, callID)
		s, c, ok := session.ParseIdempotencyKey(key)
		if !session.ValidID(sessionID) || callID == "" {
			return // not a key the loop makes
		}
		require.True(t, ok, "%q", key)
		assert.Equal(t, sessionID, s)
		assert.Equal(t, callID, c)
	})
}
