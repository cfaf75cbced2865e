package session_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

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

// TestIdempotentIsLoggedLastAndOnlyWhenTrue: a tool's declaration is the
// last key of its entry in request/header, absent when false, so a
// header without it encodes and digests as before; a line that spells
// it false is not canonical, and refused.
func TestIdempotentIsLoggedLastAndOnlyWhenTrue(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	line := func(idem bool) string {
		h := session.Header{Tools: []session.ToolSpec{{Name: "charge", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`), Idempotent: idem}}}
		r, err := session.NewRecord(3, at, session.Event{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: h}})
		require.NoError(t, err)
		return string(r.AppendLine(nil))
	}
	const prefix = `{"seq":3,"type":"request/header","time":"2026-12-01T10:00:00.000Z","turn":1,"data":{"reason":"initial","header":{"tools":[{"name":"charge","description":"d","parameters":{"type":"object"}`
	assert.Equal(t, prefix+`,"idempotent":true}]}}}`+"\n", line(true))
	assert.Equal(t, prefix+`}]}}}`+"\n", line(false))

	r, err := session.DecodeRecord([]byte(strings.TrimSuffix(line(true), "\n")))
	require.NoError(t, err)
	h, err := session.DecodeData[session.RequestHeader](r)
	require.NoError(t, err)
	assert.True(t, h.Header.Tools[0].Idempotent)
	_, err = session.DecodeRecord([]byte(prefix + `,"idempotent":false}]}}}`))
	require.Error(t, err)

	plain := session.Header{Tools: []session.ToolSpec{{Name: "charge"}}}
	idem := session.Header{Tools: []session.ToolSpec{{Name: "charge", Idempotent: true}}}
	assert.False(t, session.HeaderEquals(plain, idem), "a changed declaration is a header change")
	assert.NotEqual(t, session.RequestDigest(plain, nil), session.RequestDigest(idem, nil))
	// The digest of a header without it is what it was before the key
	// existed: the one of {"header":{"tools":[{"name":"charge"}]},"messages":[]}.
	assert.Equal(t, "eb20b569", session.RequestDigest(plain, nil)[:8])
}
