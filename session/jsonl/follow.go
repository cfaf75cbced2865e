package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"time"

	"github.com/vigil-run/vigil/session"
)

// Follow implements [session.Follower]. Records appended through a store
// of this process on the same directory wake the follower at once (what
// this store buffered for the session is written first, as [Store.Load]
// does; another store's group is seen once it is written, within its sync
// interval); records appended by other processes are seen by polling the
// file's size every 250ms. Each wake-up reads only the bytes past the last
// whole line read.
func (s *Store) Follow(ctx context.Context, id string, from int64) iter.Seq2[*session.Record, error] {
	return func(yield func(*session.Record, error) bool) {
		fail := func(err error) { yield(nil, fmt.Errorf("jsonl: follow %s: %w", id, err)) }
		if err := s.check(id); err != nil {
			fail(err)
			return
		}
		f, err := os.Open(s.Path(id))
		if errors.Is(err, fs.ErrNotExist) {
			fail(session.ErrNotFound)
			return
		}
		if err != nil {
			fail(err)
			return
		}
		defer f.Close()
		var (
			off    int64 // bytes of whole lines read
			header bool
			next   int64 // the seq of the next record in the file
			poll   = time.NewTicker(pollInterval)
		)
		defer poll.Stop()
		for {
			wake := s.note.appendWait(id)
			s.mu.Lock()
			w := s.writers[id]
			s.mu.Unlock()
			if w != nil {
				if err := w.flush(false); err != nil {
					fail(err)
					return
				}
			}
			fi, err := f.Stat()
			if err != nil {
				fail(err)
				return
			}
			if fi.Size() > off {
				data, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
				if err != nil {
					fail(err)
					return
				}
				for {
					nl := bytes.IndexByte(data, '\n')
					if nl < 0 {
						break // a line still being written (or torn, to be cut)
					}
					line := data[:nl]
					data = data[nl+1:]
					off += int64(nl + 1)
					if !header {
						info, err := session.DecodeHeader(line)
						if err == nil && info.ID != id {
							err = fmt.Errorf("%w: the header names %s", session.ErrCorrupt, info.ID)
						}
						if err != nil {
							fail(err)
							return
						}
						header = true
						continue
					}
					rec, err := session.DecodeRecord(line)
					if err == nil && rec.Seq() != next {
						err = fmt.Errorf("%w: seq %d where %d belongs", session.ErrCorrupt, rec.Seq(), next)
					}
					if err != nil {
						fail(err)
						return
					}
					next++
					if rec.Seq() < from {
						continue
					}
					if ctx.Err() != nil || !yield(rec, nil) {
						return
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-poll.C:
			}
		}
	}
}
