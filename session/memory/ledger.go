package memory

import (
	"bytes"
	"context"

	"github.com/vigil-run/vigil/session"
)

// Record implements [session.Ledger]. The entries are kept in the
// session's log, so that whatever drops the log drops them.
func (s *Store) Record(ctx context.Context, id, key string, value []byte) ([]byte, error) {
	if err := session.CheckLedgerKey(id, key); err != nil {
		return nil, session.StoreError("memory", "ledger", id, err)
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	l, ok := s.b.logs[id]
	if !ok {
		return nil, session.StoreError("memory", "ledger", id, session.ErrNotFound)
	}
	if v, ok := l.ledger[key]; ok {
		return bytes.Clone(v), nil
	}
	if l.ledger == nil {
		l.ledger = map[string][]byte{}
	}
	v := bytes.Clone(value)
	if v == nil {
		v = []byte{}
	}
	l.ledger[key] = v
	return bytes.Clone(v), nil
}

// Lookup implements [session.Ledger].
func (s *Store) Lookup(ctx context.Context, id, key string) ([]byte, bool, error) {
	if err := session.CheckLedgerKey(id, key); err != nil {
		return nil, false, session.StoreError("memory", "ledger", id, err)
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	l, ok := s.b.logs[id]
	if !ok {
		return nil, false, session.StoreError("memory", "ledger", id, session.ErrNotFound)
	}
	v, ok := l.ledger[key]
	if !ok {
		return nil, false, nil
	}
	return bytes.Clone(v), true, nil
}

var _ session.Ledger = (*Store)(nil)
