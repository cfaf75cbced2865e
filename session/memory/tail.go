package memory

import (
	"context"

	"github.com/vigil-run/vigil/session"
)

// Tail implements [session.Tailer]: the log's last turn, found from the
// end, without copying the rest.
func (s *Store) Tail(ctx context.Context, id string) (*session.Tail, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	l, ok := s.b.logs[id]
	if !ok {
		return nil, session.StoreError("memory", "tail", id, session.ErrNotFound)
	}
	from := l.records.n - 1
	for ; from > 0; from-- {
		if l.records.at(from).Type() == session.TypeTurnStart {
			break
		}
	}
	return session.TailOf(cloneInfo(l.info), l.records.slice(max(from, 0), l.records.n)), nil
}

// at returns the record of seq i.
func (r *records) at(i int) session.Record { return r.chunks[i/chunkLen][i%chunkLen] }
