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

	"github.com/vigil-run/vigil/session"
)

// Follow implements [session.Follower]. Records appended through a store
// of this process on the same directory wake the follower once they are
// durable (what this store buffered for the session is written and
// fsynced first, as [Store.Load] does, and only what its writer fsynced
// is read; another store's group is seen once it is fsynced, within its
// sync interval); records appended by other processes are seen by the
// directory's one poller, which looks at the size of each followed file
// every 250ms. A waiting follower holds no file open: each wake-up opens
// the file only when it grew, and reads only the bytes past the last whole
// line read, so thousands of followers cost neither thousands of file
// descriptors nor thousands of timers.
func (s *Store) Follow(ctx context.Context, id string, from int64) iter.Seq2[session.Record, error] {
	return func(yield func(session.Record, error) bool) {
		fail := func(err error) { yield(session.Record{}, session.StoreError("jsonl", "follow", id, err)) }
		if err := s.check(id); err != nil {
			fail(err)
			return
		}
		path := s.Path(id)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			fail(session.ErrNotFound)
			return
		} else if err != nil {
			fail(err)
			return
		}
		defer s.note.watch(id, path)()
		var (
			off    int64 // bytes of whole lines read
			header bool
			next   int64 // the seq of the next record in the file
			limit  = followChunk
		)
		for {
			wake := s.note.appendWait(id)
			// Only what is durable is read: a follower's copy is a prefix
			// of the log whatever crashes.
			lim := limit
			if durable, held := s.writeBuffered(id); held {
				lim = int(min(int64(limit), max(durable-off, 0)))
			}
			data, err := readPast(path, off, lim)
			if errors.Is(err, fs.ErrNotExist) {
				err = session.ErrNotFound // deleted
			}
			if err != nil {
				fail(err)
				return
			}
			full, start := len(data) == limit && lim == limit, off
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
			if full {
				// More may be stored: read on before waiting, reading
				// more at once only for a line longer than a chunk.
				if off == start {
					limit *= 2
				} else {
					limit = followChunk
				}
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
		}
	}
}

// followChunk is how much of a log a follower reads at once, so that
// following a long log never holds the whole of it.
var followChunk = 1 << 20

// readPast returns up to limit bytes of the file at path past off,
// opening it only when it is longer than that.
func readPast(path string, off int64, limit int) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() <= off {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read to the end as it is now (it may have grown since the Stat),
	// limit bytes at most.
	return io.ReadAll(io.NewSectionReader(f, off, int64(limit)))
}
