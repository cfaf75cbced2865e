package jsonl

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/vigil-run/vigil/session"
)

// Ping implements [session.Pinger]: the directory can be read (a
// missing one is fine: the first create makes it).
func (s *Store) Ping(ctx context.Context) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return session.StoreError("jsonl", "ping", "", session.ErrClosed)
	}
	d, err := os.Open(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		_, err = d.Readdirnames(1)
		d.Close()
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		return session.StoreError("jsonl", "ping", "", err)
	}
	return nil
}

var _ session.Pinger = (*Store)(nil)
