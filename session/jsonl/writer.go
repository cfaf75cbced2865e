package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/vigil-run/vigil/session"
)

// writer is the single writer of one session's file: it holds the file
// lock and the group commit buffer.
//
// It holds one file descriptor, the data file's, which also carries the
// lock, and only while a turn is being written: it opens and locks the
// file at the first append after it held none, and closes it (dropping
// the lock) once what was appended is durable and no turn is open, or
// the open one is suspended on an approval. A lease (see [Store.Lease])
// pins it open. Between holds it keeps what it knows of the file — its
// length and next seq — so taking the lock again reads only the bytes
// another writer appended meanwhile, none when there are none.
type writer struct {
	id       string
	path     string
	interval time.Duration
	note     *dirNote
	holder   string // the <id>.lock file naming this process while it holds the lock

	// flushMu serializes writes and fsyncs, and the opening and closing
	// of f, so that appends only wait for the buffer, never for the disk
	// (unless they close a step or must take the lock).
	flushMu  sync.Mutex
	unsynced bool // written but not yet fsynced; guarded by flushMu

	mu        sync.Mutex // guards what follows; f changes only under flushMu and mu
	f         *os.File   // the data file, locked; nil while not held
	unlock    func() error
	size      int64 // length of the file's whole lines, as known: written or read
	next      int64
	known     bool   // size and next describe the file (else it is read whole)
	inTurn    bool   // the records so far leave a turn open
	suspended bool   // … and end with an approval/request
	pinned    bool   // leased: held until released
	fresh     bool   // f was just locked: what is new in it is not read yet
	buf       []byte // appended, not yet written
	spare     []byte // the other buffer, reused
	armed     bool   // the sync timer is running
	timer     *time.Timer
	err       error // sticky: the writer is broken
	closed    bool
}

// newWriter returns the writer of id, holding nothing yet.
func newWriter(s *Store, id string) *writer {
	return &writer{id: id, path: s.Path(id), interval: s.interval, note: s.note, holder: s.holderPath(id)}
}

// learn records what a reader of the file found (size bytes of whole
// lines, holding records), unless the writer holds the file (then it
// knows better) or knows more already.
func (w *writer) learn(size int64, records []session.Record) {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.f != nil && !w.fresh:
		return // it has appended since it took the lock: it knows better
	case w.known && w.size >= size && !w.fresh:
		return
	}
	w.size, w.next, w.known = size, int64(len(records)), true
	w.inTurn, w.suspended = tailTurn(records)
}

// tailTurn reports whether records leave a turn open, and whether they
// end suspended on an approval/request.
func tailTurn(records []session.Record) (inTurn, suspended bool) {
	suspended = endsSuspended(records)
	for i := len(records) - 1; i >= 0; i-- {
		switch records[i].Type() {
		case session.TypeTurnEnd:
			return false, suspended
		case session.TypeTurnStart:
			return true, suspended
		}
	}
	return false, suspended
}

// hold takes the lock for the caller, until release: a lease.
func (w *writer) hold() error {
	if err := w.acquire(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return session.ErrClosed
	}
	w.pinned = true
	return nil
}

// acquire opens and locks the file unless the writer holds it. What was
// appended since the writer last held it is read before the first
// append (catchUp), so that a load made under the lock (a lease's) can
// tell the writer what it read instead.
func (w *writer) acquire() error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed:
		return session.ErrClosed
	case w.err != nil:
		return w.err
	case w.f != nil:
		return nil
	}
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return session.ErrNotFound
		}
		return err
	}
	unlock, ok, err := lockFile(f)
	if err != nil || !ok {
		f.Close()
		if err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		return errBusy
	}
	w.f, w.unlock, w.fresh = f, unlock, true
	writeHolder(w.holder)
	return nil
}

// errBusy is the store's busy error, made by the store, which knows the
// holder (see Store.busy).
var errBusy = errors.New("busy")

// catchUp compares the locked file's size with what the writer knows,
// and reads only what is new: whole lines are records that must
// continue the log; a torn last line (a write cut by a crash) is cut off,
// or the next record would be glued to it. A file the writer knows
// nothing of, or that is shorter than it knew, is read and validated
// whole. Called with mu held, f locked and nothing buffered.
func (w *writer) catchUp(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	w.fresh = false
	if w.known && size == w.size {
		return nil
	}
	if !w.known || size < w.size {
		data, err := io.ReadAll(io.NewSectionReader(f, 0, size))
		if err != nil {
			return err
		}
		log, err := session.DecodeBytes(data)
		if err != nil && !(errors.Is(err, session.ErrTornTail) && log != nil) {
			return err
		}
		if log.Info.ID != w.id {
			return fmt.Errorf("%w: the header names %s", session.ErrCorrupt, log.Info.ID)
		}
		w.size, w.next, w.known = log.Size, int64(len(log.Records)), true
		w.inTurn, w.suspended = tailTurn(log.Records)
		return w.cut(f, size)
	}
	data, err := io.ReadAll(io.NewSectionReader(f, w.size, size-w.size))
	if err != nil {
		return err
	}
	var recs []session.Record
	for {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			break
		}
		rec, err := session.DecodeRecord(data[:nl])
		if err != nil {
			return &session.CorruptError{Line: -1, Err: fmt.Errorf("a line appended at byte %d: %w", w.size, err)}
		}
		if rec.Seq() != w.next {
			return fmt.Errorf("%w: seq %d appended where %d was next", session.ErrCorrupt, rec.Seq(), w.next)
		}
		recs = append(recs, rec)
		w.size += int64(nl + 1)
		w.next++
		data = data[nl+1:]
	}
	if len(recs) > 0 {
		w.turnAfter(recs)
	}
	return w.cut(f, size)
}

// cut truncates a torn last line: the bytes past the whole lines.
func (w *writer) cut(f *os.File, size int64) error {
	if size == w.size {
		return nil
	}
	if err := f.Truncate(w.size); err != nil {
		return err
	}
	return f.Sync()
}

// turnAfter advances inTurn and suspended past records.
func (w *writer) turnAfter(records []session.Record) {
	in, _ := tailTurn(records)
	for _, r := range records {
		switch r.Type() {
		case session.TypeTurnStart, session.TypeTurnEnd:
			w.inTurn = in
		}
	}
	w.suspended = endsSuspended(records)
}

// endsSuspended reports whether records end with an approval/request,
// past the ignorable records (a checkpoint) after it.
func endsSuspended(records []session.Record) bool {
	for i := len(records) - 1; i >= 0; i-- {
		if !records[i].Ignorable() {
			return records[i].Type() == session.TypeApprovalRequest
		}
	}
	return false
}

// append buffers records after checking they continue the log at next,
// and writes and fsyncs them before returning when they close a step or
// a turn. The file is locked first if the writer does not hold it.
func (w *writer) append(next int64, records []session.Record) error {
	for {
		w.mu.Lock()
		if w.f != nil || w.closed || w.err != nil {
			break
		}
		w.mu.Unlock()
		if err := w.acquire(); err != nil {
			return err
		}
	}
	if w.fresh && w.err == nil && !w.closed {
		// f cannot change while mu is held, and nothing is buffered yet.
		if err := w.catchUp(w.f); err != nil {
			w.mu.Unlock()
			return err
		}
	}
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
	if len(records) > 0 {
		w.turnAfter(records)
		// A suspension is durable before the step waits.
		sync = sync || w.suspended
	}
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
		return w.flush()
	}
	return nil
}

// tick is the sync timer's group commit.
func (w *writer) tick() {
	w.mu.Lock()
	w.armed = false
	w.mu.Unlock()
	_ = w.flush() // a failure is sticky and reported by the next call
}

// flush writes the buffer and fsyncs everything written; then, when
// nothing is left to write and no turn is being written, it lets the
// file go. Nothing is written without its fsync: what a reader of this
// process sees of the file is durable (a follower reads only up to
// durableLen, as the write and the fsync are not one step).
func (w *writer) flush() error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	if w.closed || w.f == nil {
		w.mu.Unlock()
		return nil
	}
	data := w.buf
	w.buf, w.spare = w.spare[:0], nil
	if w.armed {
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
	}
	if err == nil && w.unsynced {
		if err = w.f.Sync(); err == nil {
			w.unsynced = false
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.spare = data[:0]
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return err
	}
	w.size += int64(len(data))
	if len(data) > 0 && !w.unsynced {
		// Followers (in any store of this process) are woken once what
		// they will read is durable: a follower is given durable records
		// only.
		w.note.appended(w.id)
	}
	if !w.unsynced && len(w.buf) == 0 && !w.armed && !w.pinned && (!w.inTurn || w.suspended) {
		err = w.letGo()
	}
	return err
}

// durableLen returns the length of the file's whole lines that are
// durable, when the writer holds the file (held): w.size moves only once
// a flush's write is fsynced.
func (w *writer) durableLen() (size int64, held bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size, w.f != nil && !w.fresh && w.known
}

// letGo closes the file, which drops the lock, keeping what the writer
// knows of it. Called with flushMu and mu held, everything written.
func (w *writer) letGo() error {
	if w.f == nil {
		return nil
	}
	// Removed while the lock is still held: only a holder writes it.
	_ = os.Remove(w.holder)
	err := errors.Join(w.f.Close(), w.unlock())
	w.f, w.unlock = nil, nil
	w.buf, w.spare = nil, nil
	return err
}

// release ends a hold (a lease, or the session's close): it flushes and
// lets the file go. The writer stays usable: a later append takes the
// lock again.
func (w *writer) release() error {
	w.mu.Lock()
	w.pinned = false
	w.mu.Unlock()
	err := w.flush()
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return err
	}
	if w.err != nil {
		return errors.Join(err, w.reset())
	}
	if len(w.buf) == 0 && !w.unsynced {
		err = errors.Join(err, w.letGo())
	}
	return err
}

// reset ends the hold of a broken writer (a write or an fsync failed: a
// full disk): what was buffered is lost, and the appends that wrote it
// were told. The file goes, and what the writer knew of it with it, so
// that the next append reads the file as it is (cutting a line the
// failed write tore) and goes on once there is space again: a disk that
// filled up once does not poison the session until a restart. Called
// with flushMu and mu held.
func (w *writer) reset() error {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.armed = false
	err := w.letGo()
	w.err, w.known, w.unsynced, w.fresh = nil, false, false, false
	w.inTurn, w.suspended = false, false
	return err
}

// close flushes, stops the timer and lets the file go, for good.
func (w *writer) close() error {
	err := w.flush()
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return err
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	return errors.Join(err, w.letGo())
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
	if w.f != nil {
		_ = w.f.Close()
		_ = w.unlock()
		w.f = nil
	}
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
