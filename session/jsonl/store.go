package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/vigil-run/vigil/session"
)

// DefaultSyncInterval is how long an append may wait to be written and
// fsynced when nothing closes its step sooner, unless [WithSyncInterval]
// says otherwise.
const DefaultSyncInterval = 10 * time.Millisecond

const ext = ".jsonl"

// Store keeps session logs as files in a directory. It is safe for
// concurrent use.
type Store struct {
	dir      string
	interval time.Duration

	note *dirNote // wake-ups shared with the stores open on dir in this process

	mu      sync.Mutex
	writers map[string]*writer
	q       *jqueue // made at the first queue call
	closed  bool
}

// Option configures a [Store].
type Option func(*Store)

// WithSyncInterval sets the longest time an append waits for its group's
// write and fsync (see the package doc). Zero or less writes and fsyncs
// every append before it returns.
func WithSyncInterval(d time.Duration) Option {
	return func(s *Store) { s.interval = d }
}

// Open returns a store over dir. A missing directory is created by the
// first create or fork, not by Open: a store that is only read (vigil
// sessions list) leaves no directory behind, and lists no sessions.
func Open(dir string, opts ...Option) (*Store, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("jsonl: open %s: not a directory", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, session.StoreError("jsonl", "open", dir, err)
	}
	s := &Store{dir: dir, interval: DefaultSyncInterval, writers: map[string]*writer{}}
	for _, o := range opts {
		o(s)
	}
	cleanTemps(dir)
	s.note = openNote(dir)
	return s, nil
}

// staleTemp is the age from which a temporary file no install holds is
// a crash's leftover. An install locks its file an instant after it
// creates it and holds the lock until the file is gone; the age keeps a
// file that was created but not yet locked out of reach.
const staleTemp = time.Minute

// cleanTemps removes the temporary files that installs interrupted by a
// crash left behind: a file is removed only if its name is one install
// makes, it is older than staleTemp, and no install holds its lock (one
// in another process may be writing it right now). Failures are ignored:
// a leftover is harmless, and the next open tries again.
func cleanTemps(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isTempName(e.Name()) {
			continue
		}
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < staleTemp {
			continue
		}
		path := filepath.Join(dir, e.Name())
		lock := flock.New(path, flock.SetFlag(os.O_RDONLY))
		if ok, err := lock.TryLock(); err == nil && ok {
			_ = os.Remove(path)
		}
		_ = lock.Close()
	}
}

// tempPattern is the os.CreateTemp pattern of the file install writes
// the log of id under: "."+id+"."+random digits+".tmp".
func tempPattern(id string) string { return "." + id + ".*.tmp" }

// isTempName reports whether name is one tempPattern makes.
func isTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return false
	}
	if rest, ok = strings.CutSuffix(rest, ".tmp"); !ok {
		return false
	}
	// Ids have no dots: the last dot ends the id.
	i := strings.LastIndexByte(rest, '.')
	if i < 0 || !session.ValidID(rest[:i]) || i == len(rest)-1 {
		return false
	}
	for _, c := range rest[i+1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Path returns the file of session id.
func (s *Store) Path(id string) string { return filepath.Join(s.dir, id+ext) }

// Create implements [session.Store].
func (s *Store) Create(ctx context.Context, info session.Info) error {
	if err := s.check(info.ID); err != nil {
		return session.StoreError("jsonl", "create", "", err)
	}
	if info.Version == 0 {
		info.Version = session.Version
	}
	if err := s.install(info, session.AppendHeaderLine(nil, info), 0); err != nil {
		return session.StoreError("jsonl", "create", info.ID, err)
	}
	return nil
}

// Fork implements [session.Store].
func (s *Store) Fork(ctx context.Context, info session.Info, tail []session.Record) error {
	if info.Parent == nil {
		return fmt.Errorf("jsonl: fork %s: no parent", info.ID)
	}
	if err := s.check(info.ID); err != nil {
		return session.StoreError("jsonl", "fork", "", err)
	}
	if info.Version == 0 {
		info.Version = session.Version
	}
	parent, err := s.Load(ctx, info.Parent.ID)
	if err != nil {
		return fmt.Errorf("fork %s: parent: %w", info.ID, err)
	}
	at := info.Parent.Seq
	if at < -1 || at >= int64(len(parent.Records)) {
		return session.StoreError("jsonl", "fork", info.ID, fmt.Errorf("%w: parent %s has seqs 0..%d, not %d",
			session.ErrSeqGap, info.Parent.ID, len(parent.Records)-1, at))
	}
	if err := session.CheckSeqs(at+1, tail); err != nil {
		return session.StoreError("jsonl", "fork", info.ID, err)
	}
	buf := session.AppendHeaderLine(nil, info)
	for _, r := range parent.Records[:at+1] {
		buf = r.AppendLine(buf)
	}
	for _, r := range tail {
		buf = r.AppendLine(buf)
	}
	if err := s.install(info, buf, at+1+int64(len(tail))); err != nil {
		return session.StoreError("jsonl", "fork", info.ID, err)
	}
	return nil
}

// install writes a new log file atomically (temporary file, fsync, link
// into place, fsync of the directory) and becomes its writer.
func (s *Store) install(info session.Info, content []byte, next int64) error {
	path := s.Path(info.ID)
	if err := writeTemp(s.dir, info.ID, content, path); err != nil {
		return err
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.ErrClosed
	}
	// The writer knows the file it wrote: its first append reads nothing.
	w := newWriter(s, info.ID)
	w.size, w.next, w.known = int64(len(content)), next, true
	s.writers[info.ID] = w
	return nil
}

// writeTemp writes content to a new temporary file, fsyncs it and links it
// to path. It holds the temporary file's lock throughout, so that
// [cleanTemps] in another store leaves it alone.
func writeTemp(dir, id string, content []byte, path string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, tempPattern(id))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	lock := flock.New(tmp.Name(), flock.SetFlag(os.O_RDONLY))
	defer lock.Close()
	if ok, err := lock.TryLock(); err != nil || !ok {
		tmp.Close()
		return fmt.Errorf("lock %s: %w (locked: %v)", tmp.Name(), err, !ok)
	}
	_, err = tmp.Write(content)
	if err == nil {
		err = tmp.Sync()
	}
	if e := tmp.Close(); err == nil {
		err = e
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return session.ErrExists
		}
		return err
	}
	return nil
}

// lockPoll is how often a Lease that waits tries the lock again.
const lockPoll = 50 * time.Millisecond

// Lease implements [session.Leaser]: it takes session id's writer (its
// file lock) for the caller, so that no other Store, in this process or
// another, writes the session until release is called; the caller then
// opens the session, and repairs an interrupted turn, under the lock (see
// live.OpenLeased). When another holds the lock, Lease fails with an
// error wrapping [session.ErrLocked] that names the holder (from the
// session's <id>.lock file), or, with wait, waits for the lock until ctx
// is done. A store that holds the writer already (it created the
// session) has the lease at once. release closes the writer, unless it
// was released already.
func (s *Store) Lease(ctx context.Context, id string, wait bool) (release func(), err error) {
	w, err := s.writer(id)
	if err != nil && wait && errors.Is(err, session.ErrLocked) {
		w, err = s.waitWriter(ctx, id)
	}
	if err != nil {
		return nil, session.StoreError("jsonl", "lease", id, err)
	}
	return func() { s.releaseWriter(id, w) }, nil
}

// waitWriter waits for the lock of id, then takes the session's writer.
func (s *Store) waitWriter(ctx context.Context, id string) (*writer, error) {
	t := time.NewTicker(lockPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the lock: %w", context.Cause(ctx))
		case <-t.C:
		}
		w, err := s.writer(id)
		if !errors.Is(err, session.ErrLocked) {
			return w, err
		}
	}
}

// releaseWriter ends the hold of w (see Store.writer), if it is still
// id's writer: the file and its lock go, what w knows of the file stays.
func (s *Store) releaseWriter(id string, w *writer) {
	s.mu.Lock()
	cur := s.writers[id]
	s.mu.Unlock()
	if cur != w {
		return
	}
	_ = w.release() // a write error was returned by the appends already
	s.note.wakeQueue()
}

// busy is the ErrLocked error of id, naming its holder.
func (s *Store) busy(id string) error {
	holder := describeHolder(s.holderPath(id))
	return &session.LockError{Holder: holder, Err: fmt.Errorf("%w (held by %s)", session.ErrLocked, holder)}
}

// holderPath is the file naming the process that holds id's lock.
func (s *Store) holderPath(id string) string { return filepath.Join(s.dir, id+".lock") }

// Append implements [session.Store].
func (s *Store) Append(ctx context.Context, id string, next int64, records []session.Record) error {
	w, err := s.appender(id)
	if err != nil {
		return session.StoreError("jsonl", "append", id, err)
	}
	if err := w.append(next, records); err != nil {
		if errors.Is(err, errBusy) {
			err = s.busy(id)
		}
		return session.StoreError("jsonl", "append", id, err)
	}
	if len(records) > 0 {
		s.note.appended(id)
	}
	return nil
}

// Load implements [session.Store]. Records this store buffered for id
// are written first, so the log is complete; when they cannot be (the
// disk is full), the log is what the file holds.
func (s *Store) Load(ctx context.Context, id string) (*session.Log, error) {
	return s.LoadEach(ctx, id, nil)
}

// LoadEach implements [session.EachLoader]: Load that hands each record
// to each as the file is decoded (see [session.DecodeOwnedEach]).
func (s *Store) LoadEach(ctx context.Context, id string, each func(session.Record)) (*session.Log, error) {
	if err := s.check(id); err != nil {
		return nil, session.StoreError("jsonl", "load", "", err)
	}
	s.writeBuffered(id)
	data, err := os.ReadFile(s.Path(id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, session.NotFound(id)
		}
		return nil, session.StoreError("jsonl", "load", id, err)
	}
	log, err := session.DecodeOwnedEach(data, each)
	if err != nil && !(errors.Is(err, session.ErrTornTail) && log != nil) {
		return nil, session.StoreError("jsonl", "load", id, err)
	}
	if log.Info.ID != id {
		return nil, session.StoreError("jsonl", "load", id, fmt.Errorf("%w: the header names %s", session.ErrCorrupt, log.Info.ID))
	}
	// What was read is what the session's writer starts from: its first
	// append reads nothing again (see writer.catchUp).
	if w, err := s.appender(id); err == nil {
		w.learn(log.Size, log.Records)
	}
	return log, nil
}

// Info implements [session.InfoReader]: it reads the log file's first
// line only.
func (s *Store) Info(ctx context.Context, id string) (session.Info, error) {
	if err := s.check(id); err != nil {
		return session.Info{}, session.StoreError("jsonl", "info", "", err)
	}
	info, err := readHeader(s.Path(id))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return session.Info{}, session.NotFound(id)
	case err != nil:
		return session.Info{}, session.StoreError("jsonl", "info", id, err)
	case info.ID != id:
		return session.Info{}, session.StoreError("jsonl", "info", id, fmt.Errorf("%w: the header names %s", session.ErrCorrupt, info.ID))
	}
	return info, nil
}

// writeBuffered writes and fsyncs what this store buffered for id, so
// that a read of its file sees every record appended through this store,
// durable. While this store's writer holds the file (so no one else
// writes it), it also returns the length of the file that is durable
// (held true): a concurrent flush may have written bytes that are not
// yet. A flush that fails (a full disk) lost what it could not write:
// the file is all there is, and is read, so a read recovers once space
// is back.
func (s *Store) writeBuffered(id string) (durable int64, held bool) {
	s.mu.Lock()
	w := s.writers[id]
	s.mu.Unlock()
	if w == nil {
		return 0, false
	}
	_ = w.flush()
	return w.durableLen()
}

// List implements [session.Store]. A file whose header cannot be read (or
// names another session) is left out and named, by file name, in the
// [*session.ListError] returned with the others.
func (s *Store) List(ctx context.Context) ([]session.Info, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // nothing created yet
	}
	if err != nil {
		return nil, session.StoreError("jsonl", "list", "", err)
	}
	var out []session.Info
	var bad []session.EntryError
	for _, e := range entries {
		name := e.Name()
		id, ok := strings.CutSuffix(name, ext)
		if !ok || e.IsDir() || !session.ValidID(id) {
			continue
		}
		info, err := readHeader(filepath.Join(s.dir, name))
		if err == nil && info.ID != id {
			err = fmt.Errorf("%w: the header names %s", session.ErrCorrupt, info.ID)
		}
		if err != nil {
			bad = append(bad, session.EntryError{Name: name, Err: err})
			continue
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b session.Info) int { return strings.Compare(a.ID, b.ID) })
	if len(bad) > 0 {
		return out, &session.ListError{Entries: bad}
	}
	return out, nil
}

// readHeader reads the header line of a log file.
func readHeader(path string) (session.Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return session.Info{}, err
	}
	defer f.Close()
	buf := make([]byte, 0, 512)
	chunk := make([]byte, 512)
	for {
		n, err := f.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			info, err := session.DecodeHeader(buf[:i])
			if err != nil {
				if errors.Is(err, session.ErrVersion) {
					return session.Info{}, fmt.Errorf("line 1: %w", err)
				}
				return session.Info{}, &session.CorruptError{Line: 1, Err: err}
			}
			return info, nil
		}
		if errors.Is(err, io.EOF) && len(buf) == 0 {
			return session.Info{}, &session.CorruptError{Line: 1, Err: fmt.Errorf("%w: empty log", session.ErrMalformed)}
		}
		if err != nil || len(buf) > 1<<20 {
			return session.Info{}, &session.CorruptError{Line: 1, Err: fmt.Errorf("%w: the header line", session.ErrTornTail)}
		}
	}
}

// Flush implements [session.Flusher]: it writes and fsyncs what was
// appended to id.
func (s *Store) Flush(ctx context.Context, id string) error {
	s.mu.Lock()
	w := s.writers[id]
	s.mu.Unlock()
	if w == nil {
		if _, err := os.Stat(s.Path(id)); err != nil {
			return session.NotFound(id)
		}
		return nil
	}
	if err := w.flush(); err != nil {
		return session.StoreError("jsonl", "flush", id, err)
	}
	return nil
}

// Release implements [session.Releaser]: it flushes id, closes its file
// and drops its lock (a lease on it too).
func (s *Store) Release(id string) error {
	s.mu.Lock()
	w := s.writers[id]
	s.mu.Unlock()
	if w == nil {
		return nil
	}
	err := w.release()
	s.note.wakeQueue()
	if err != nil {
		return session.StoreError("jsonl", "release", id, err)
	}
	return nil
}

// Close releases every session and ends the store's claims (their jobs
// are claimed again by other stores, as a crashed worker's are); the
// store refuses writes afterwards.
func (s *Store) Close() error {
	return s.shut(false)
}

// shut closes the store; with crash, as a dying process would: nothing
// buffered is written, and the files a clean close removes stay.
func (s *Store) shut(crash bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ws := s.writers
	s.writers = map[string]*writer{}
	q := s.q
	s.mu.Unlock()
	var errs []error
	for id, w := range ws {
		if crash {
			w.abandon()
		} else if err := w.close(); err != nil {
			errs = append(errs, session.StoreError("jsonl", "close", id, err))
		}
	}
	if q != nil {
		q.close(crash)
	}
	s.note.wakeQueue()
	closeNote(s.dir, s.note)
	return errors.Join(errs...)
}

func (s *Store) check(id string) error {
	if !session.ValidID(id) {
		return session.InvalidID(id)
	}
	return nil
}

// writer returns the writer of id holding its lock for the caller (a
// lease, a queue's claim) until releaseWriter: an ErrLocked error when
// another holds it.
func (s *Store) writer(id string) (*writer, error) {
	w, err := s.appender(id)
	if err != nil {
		return nil, err
	}
	if err := w.hold(); err != nil {
		if errors.Is(err, errBusy) {
			return nil, s.busy(id)
		}
		return nil, err
	}
	return w, nil
}

// appender returns the writer of id, made (holding nothing) if needed.
func (s *Store) appender(id string) (*writer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, session.ErrClosed
	}
	if w := s.writers[id]; w != nil {
		return w, nil
	}
	if err := s.check(id); err != nil {
		return nil, err
	}
	w := newWriter(s, id)
	s.writers[id] = w
	return w, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

var (
	_ session.Leaser   = (*Store)(nil)
	_ session.Store    = (*Store)(nil)
	_ session.Flusher  = (*Store)(nil)
	_ session.Releaser = (*Store)(nil)
	_ session.Follower = (*Store)(nil)
	_ session.Tailer   = (*Store)(nil)
)
