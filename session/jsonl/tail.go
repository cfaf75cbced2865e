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

// tailChunk is how much of a log file Tail reads at a time, from its end.
var tailChunk = 64 << 10

// Tail implements [session.Tailer]: it reads the file from its end back
// to the last turn/start line and decodes only the lines from there on,
// so a summary of a large log costs its last turn, not the log. What
// this store buffered for the session is written first, as Load does; a
// torn last line is left out, as Load leaves it.
func (s *Store) Tail(ctx context.Context, id string) (*session.Tail, error) {
	if err := s.check(id); err != nil {
		return nil, session.StoreError("jsonl", "tail", "", err)
	}
	s.writeBuffered(id)
	t, err := tailFile(s.Path(id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = session.ErrNotFound
		}
		return nil, session.StoreError("jsonl", "tail", id, err)
	}
	if t.Info.ID != id {
		return nil, session.StoreError("jsonl", "tail", id, fmt.Errorf("%w: the header names %s", session.ErrCorrupt, t.Info.ID))
	}
	return t, nil
}

// tailFile reads the tail of the log file at path.
func tailFile(path string) (*session.Tail, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := readHeader(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	hdr := int64(len(session.AppendHeaderLine(nil, info)))
	from, end, err := lastTurnStart(f, hdr, fi.Size())
	if err != nil {
		return nil, err
	}
	data := make([]byte, end-from)
	if _, err := f.ReadAt(data, from); err != nil {
		return nil, err
	}
	var recs []session.Record
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		rec, err := session.DecodeRecord(data[:nl])
		if err == nil && len(recs) > 0 && rec.Seq() != recs[len(recs)-1].Seq()+1 {
			err = fmt.Errorf("%w: seq %d after %d", session.ErrCorrupt, rec.Seq(), recs[len(recs)-1].Seq())
		}
		if err != nil {
			return nil, fmt.Errorf("at byte %d: %w", end-int64(len(data)), err)
		}
		recs = append(recs, rec)
		data = data[nl+1:]
	}
	return session.TailOf(info, recs), nil
}

// lastTurnStart finds, in the record lines of f between offsets hdr (the
// header's end) and size, the byte range [from, end) to decode: from the
// start of the last turn/start line (or of the last line, when there is
// none) to the end of the last whole line. It reads backwards in chunks;
// only a line that looks like a turn/start is decoded to make sure.
func lastTurnStart(f io.ReaderAt, hdr, size int64) (from, end int64, err error) {
	if end, err = lastLineEnd(f, hdr, size); err != nil {
		return 0, 0, err
	}
	from = end
	for start, line := range linesBackward(f, hdr, end, &err) {
		if from == end {
			from = start // the last line, unless a turn/start comes
		}
		if turnStart(line) {
			return start, end, nil
		}
	}
	return from, end, err
}

// lastLineEnd returns the offset just past the last newline of f in
// [hdr, size), hdr when there is none: what follows it is a torn line
// (or one still being written), left out.
func lastLineEnd(f io.ReaderAt, hdr, size int64) (int64, error) {
	for pos := size; pos > hdr; {
		n := min(int64(tailChunk), pos-hdr)
		pos -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, pos); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return pos + int64(i) + 1, nil
		}
	}
	return hdr, nil
}

// linesBackward yields the lines of f in [lo, hi) (hi just past a
// newline), last first, each with its offset and without its newline,
// reading tailChunk bytes at a time. A read error ends it into *err.
func linesBackward(f io.ReaderAt, lo, hi int64, err *error) iter.Seq2[int64, []byte] {
	return func(yield func(int64, []byte) bool) {
		if hi <= lo {
			return
		}
		pos := hi - 1   // the last newline ends the last line
		var rest []byte // the bytes of the current line after pos
		for pos > lo {
			n := min(int64(tailChunk), pos-lo)
			pos -= n
			buf := make([]byte, n)
			if _, *err = f.ReadAt(buf, pos); *err != nil {
				return
			}
			end := len(buf)
			for i := len(buf) - 1; i >= 0; i-- {
				if buf[i] != '\n' {
					continue
				}
				if !yield(pos+int64(i)+1, append(buf[i+1:end:end], rest...)) {
					return
				}
				rest, end = nil, i
			}
			rest = append(buf[:end:end], rest...)
		}
		yield(lo, rest)
	}
}

// turnStart reports whether line is a turn/start record: the canonical
// prefix is checked first, and only a line that has it is decoded.
func turnStart(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if ok {
		rest = bytes.TrimLeft(rest, "0123456789")
		if !bytes.HasPrefix(rest, []byte(`,"type":"turn/start"`)) {
			return false
		}
	}
	rec, err := session.DecodeRecord(line)
	return err == nil && rec.Type() == session.TypeTurnStart
}
