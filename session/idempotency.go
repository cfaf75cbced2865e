package session

import "strings"

// IdempotencyKey is the key every tool invocation carries: the session's
// id, a '/', and the call's id, verbatim. The call id is unique within
// its session (the loop makes it so, see docs/log-format.md) and both
// are in the log before the tool runs, so the key is the same wherever
// the call is run again: a continuation after a crash, a resumed step,
// another process. (A replay runs no tool: the recording answers each
// call, and the recorded call's key is derived from the recorded log.)
// A session id never holds '/' (see [ValidID]), so the key
// splits back at its first '/' ([ParseIdempotencyKey]).
//
// A tool that forwards the key to a service with a stricter alphabet or
// length (an HTTP Idempotency-Key header, say) hashes it; the key itself
// stays readable so that a person can find the call it names in the log.
func IdempotencyKey(sessionID, callID string) string {
	return sessionID + "/" + callID
}

// ParseIdempotencyKey splits a key [IdempotencyKey] made into the session
// id and the call id. ok is false for a string no valid session id and
// non-empty call id make.
func ParseIdempotencyKey(key string) (sessionID, callID string, ok bool) {
	sessionID, callID, found := strings.Cut(key, "/")
	if !found || !ValidID(sessionID) || callID == "" {
		return "", "", false
	}
	return sessionID, callID, true
}
