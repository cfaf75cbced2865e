package live

import "github.com/vigil-run/vigil/session"

// Ledger returns the ledger its store keeps beside the session's log (the
// results of its tool calls by idempotency key, see [session.Ledger]),
// nil when the store keeps none.
func (s *Session) Ledger() session.Ledger {
	l, _ := s.m.store.(session.Ledger)
	return l
}
