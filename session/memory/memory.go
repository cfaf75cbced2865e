// Package memory is a [session.Store] that keeps logs in memory: for
// tests, demos and sessions that need not outlive the process. Everything
// appended is "durable" at once, for as long as the Store lives.
package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/vigil-run/vigil/session"
)

// Store is an in-memory [session.Store]. The zero value is not usable;
// call [New]. It is safe for concurrent use.
type Store struct {
	mu   sync.RWMutex
	logs map[string]*log
}

type log struct {
	info    session.Info
	records []*session.Record
}

// New returns an empty store.
func New() *Store { return &Store{logs: map[string]*log{}} }

// Create implements [session.Store].
func (s *Store) Create(ctx context.Context, info session.Info) error {
	if !session.ValidID(info.ID) {
		return fmt.Errorf("memory: create: %w: %q", session.ErrInvalidID, info.ID)
	}
	if info.Version == 0 {
		info.Version = session.Version
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.logs[info.ID]; ok {
		return fmt.Errorf("memory: create %s: %w", info.ID, session.ErrExists)
	}
	s.logs[info.ID] = &log{info: cloneInfo(info)}
	return nil
}

// Append implements [session.Store].
func (s *Store) Append(ctx context.Context, id string, next int64, records []*session.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[id]
	if !ok {
		return fmt.Errorf("memory: append %s: %w", id, session.ErrNotFound)
	}
	if n := int64(len(l.records)); n != next {
		return fmt.Errorf("memory: append %s: %w: log continues at %d, not %d", id, session.ErrConflict, n, next)
	}
	if err := session.CheckSeqs(next, records); err != nil {
		return fmt.Errorf("memory: append %s: %w", id, err)
	}
	l.records = append(l.records, records...)
	return nil
}

// Load implements [session.Store].
func (s *Store) Load(ctx context.Context, id string) (*session.Log, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	l, ok := s.logs[id]
	if !ok {
		return nil, fmt.Errorf("memory: load %s: %w", id, session.ErrNotFound)
	}
	return &session.Log{Info: cloneInfo(l.info), Records: slices.Clone(l.records)}, nil
}

// List implements [session.Store].
func (s *Store) List(ctx context.Context) ([]session.Info, error) {
	s.mu.RLock()
	out := make([]session.Info, 0, len(s.logs))
	for _, l := range s.logs {
		out = append(out, cloneInfo(l.info))
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b session.Info) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Fork implements [session.Store].
func (s *Store) Fork(ctx context.Context, info session.Info, tail []*session.Record) error {
	if info.Parent == nil {
		return fmt.Errorf("memory: fork %s: no parent", info.ID)
	}
	if !session.ValidID(info.ID) {
		return fmt.Errorf("memory: fork: %w: %q", session.ErrInvalidID, info.ID)
	}
	if info.Version == 0 {
		info.Version = session.Version
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.logs[info.Parent.ID]
	if !ok {
		return fmt.Errorf("memory: fork %s: parent %s: %w", info.ID, info.Parent.ID, session.ErrNotFound)
	}
	if _, ok := s.logs[info.ID]; ok {
		return fmt.Errorf("memory: fork %s: %w", info.ID, session.ErrExists)
	}
	at := info.Parent.Seq
	if at < -1 || at >= int64(len(p.records)) {
		return fmt.Errorf("memory: fork %s: %w: parent %s has seqs 0..%d, not %d", info.ID, session.ErrSeqGap, p.info.ID, len(p.records)-1, at)
	}
	if err := session.CheckSeqs(at+1, tail); err != nil {
		return fmt.Errorf("memory: fork %s: %w", info.ID, err)
	}
	recs := make([]*session.Record, 0, int(at+1)+len(tail))
	recs = append(append(recs, p.records[:at+1]...), tail...)
	s.logs[info.ID] = &log{info: cloneInfo(info), records: recs}
	return nil
}

func cloneInfo(i session.Info) session.Info {
	if i.Parent != nil {
		p := *i.Parent
		i.Parent = &p
	}
	return i
}

var _ session.Store = (*Store)(nil)
