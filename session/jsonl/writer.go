package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/vigil-run/vigil/session"
)

// writer is the single writer of one session's file: it holds the file
// lock and the group commit buffer.
type writer struct {
	id       string
	interval time.Duration
	note     *dirNote
	f        *os.File
	lock     *flock.Flock
	holder   string // the <id>.lock file naming this process while it holds lock

	// flushMu serializes writes and fsyncs, so that appends only wait for
	// the buffer, never for the disk (unless they close a step).
	flushMu  sync.Mutex
	unsynced bool // written but not yet fsynced; guarded by flushMu

	mu     sync.Mutex // guards what follows
	next   int64
	buf    []byte // appended, not yet written
	spare  []byte // the other buffer, reused
	armed  bool   // the sync timer is running
	timer  *time.Timer
	err    error // sticky: the writer is broken
	closed bool
}

// openWriter locks path and opens it for appending. lock, when not nil,
// is path's lock, already held (it is the writer's from then on). next,
// when not nil, is the length of a log this store just installed;
// otherwise the file is read and validated, and a torn last line cut off:
// only under the lock, so never while another writer is appending.
func openWriter(s *Store, id, path string, next *int64, lock *flock.Flock) (*writer, error) {
	if lock == nil {
		lock = flock.New(path, flock.SetFlag(os.O_RDONLY))
		ok, err := lock.TryLock()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, session.ErrNotFound
			}
			return nil, fmt.Errorf("lock: %w", err)
		}
		if !ok {
			return nil, s.busy(id)
		}
	}
	w := &writer{id: id, interval: s.interval, note: s.note, lock: lock, holder: s.holderPath(id)}
	fail := func(err error) (*writer, error) {
		if w.f != nil {
			w.f.Close()
		}
		lock.Close()
		return nil, err
	}
	var err error
	w.f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fail(err)
	}
	writeHolder(w.holder)
	if next != nil {
		w.next = *next
		return w, nil
	}
	data, err := io.ReadAll(w.f)
	if err != nil {
		return fail(err)
	}
	log, err := session.DecodeBytes(data)
	if err != nil && !(errors.Is(err, session.ErrTornTail) && log != nil) {
		return fail(err)
	}
	if log.Info.ID != id {
		return fail(fmt.Errorf("%w: the header names %s", session.ErrCorrupt, log.Info.ID))
	}
	if log.Torn > 0 {
		// Cut the torn line, or the next record would be glued to it.
		if err := w.f.Truncate(log.Size); err != nil {
			return fail(err)
		}
		if err := w.f.Sync(); err != nil {
			return fail(err)
		}
	}
	w.next = int64(len(log.Records))
	return w, nil
}

// append buffers records after checking they continue the log at next,
// and writes and fsyncs them before returning when they close a step or
// a turn.
func (w *writer) append(next int64, records []*session.Record) error {
	w.mu.Lock()
	switch {
	case w.closed:
		w.mu.Unlock()
		return session.ErrClosed
	case w.err != nil:
		err := w.err
		w.mu.Unlock()
		return err
	case next != w.next:
		n := w.next
		w.mu.Unlock()
		return fmt.Errorf("%w: log continues at %d, not %d", session.ErrConflict, n, next)
	}
	if err := session.CheckSeqs(next, records); err != nil {
		w.mu.Unlock()
		return err
	}
	sync := w.interval <= 0 || session.ClosesStep(records)
	for _, r := range records {
		w.buf = r.AppendLine(w.buf)
	}
	w.next += int64(len(records))
	if !sync && !w.armed {
		w.armed = true
		if w.timer == nil {
			w.timer = time.AfterFunc(w.interval, w.tick)
		} else {
			w.timer.Reset(w.interval)
		}
	}
	w.mu.Unlock()
	if sync {
		return w.flush(true)
	}
	return nil
}

// tick is the sync timer's group commit.
func (w *writer) tick() {
	w.mu.Lock()
	w.armed = false
	w.mu.Unlock()
	_ = w.flush(true) // a failure is sticky and reported by the next call
}

// flush writes the buffer and, with sync, fsyncs everything written.
func (w *writer) flush(sync bool) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	data := w.buf
	w.buf, w.spare = w.spare[:0], nil
	if sync && w.armed {
		// Everything is being synced now: the timer would only sync what
		// is appended after this, sooner than it needs to be.
		w.timer.Stop()
		w.armed = false
	}
	w.mu.Unlock()

	var err error
	if len(data) > 0 {
		_, err = w.f.Write(data)
		w.unsynced = true
		// Followers in other stores of this process read the file.
		w.note.appended(w.id)
	}
	if err == nil && sync && w.unsynced {
		if err = w.f.Sync(); err == nil {
			w.unsynced = false
		}
	}
	w.mu.Lock()
	w.spare = data[:0]
	if err != nil && w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	return err
}

// close flushes, stops the timer, closes the file and drops the lock.
func (w *writer) close() error {
	err := w.flush(true)
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return err
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	// Removed while the lock is still held: only a holder writes it.
	_ = os.Remove(w.holder)
	return errors.Join(err, w.f.Close(), w.lock.Close())
}

// abandon drops the file and its lock as a dying process would: what is
// buffered is lost, the holder file stays.
func (w *writer) abandon() {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	_ = w.f.Close()
	_ = w.lock.Close()
}

// holderInfo is what the <id>.lock file records of the process holding a
// session's lock, for the error or progress line of another that wants it.
type holderInfo struct {
	PID   int    `json:"pid"`
	Host  string `json:"host"`
	Since string `json:"since"`
}

// writeHolder records this process as the holder. It is informative only
// (the lock is the file lock): a failure to write it is ignored.
func writeHolder(path string) {
	host, _ := os.Hostname()
	b, _ := json.Marshal(holderInfo{PID: os.Getpid(), Host: host, Since: time.Now().UTC().Format(time.RFC3339)})
	_ = os.WriteFile(path, append(b, '\n'), 0o644)
}

// describeHolder names the holder path records, or says it is unknown (a
// writer that has just taken the lock may not have written it yet).
func describeHolder(path string) string {
	b, err := os.ReadFile(path)
	var h holderInfo
	if err != nil || json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return "a process that does not say which"
	}
	return fmt.Sprintf("pid %d on %s since %s", h.PID, h.Host, h.Since)
}
