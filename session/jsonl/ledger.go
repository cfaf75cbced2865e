package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/vigil-run/vigil/session"
)

// The ledger of a session (session.Ledger) is the file <id>.ledger beside
// its log: a header line binding it to the log, then one line per entry,
// appended under an exclusive flock(2) of the file and fsynced before
// Record returns:
//
//	{"ledger":"<id>","created":"<the log header's created>"}
//	{"key":"<id>/<call>","value":"<base64 of the bytes>"}
//
// A line torn by a crash (no trailing newline) is never read, and is cut
// off by the next Record. A ledger whose header names another log (one
// left behind by a deletion that crashed, then a new session of the same
// id) is empty to readers and replaced by the next Record, so a session
// never sees the entries of an earlier one of its id. Deleting a session
// deletes <id>.ledger with <id>.jsonl.

const ledgerExt = ".ledger"

// ledgerPoll is how often a Record or Lookup tries a held lock again.
const ledgerPoll = 5 * time.Millisecond

// LedgerPath returns the file of session id's ledger, which goes with the
// session's log (see the package doc).
func (s *Store) LedgerPath(id string) string { return filepath.Join(s.dir, id+ledgerExt) }

// ledgerHeader is the first line of a ledger file.
type ledgerHeader struct {
	Ledger  string    `json:"ledger"`
	Created time.Time `json:"created"`
}

// ledgerEntry is every later line.
type ledgerEntry struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Record implements [session.Ledger].
func (s *Store) Record(ctx context.Context, id, key string, value []byte) ([]byte, error) {
	v, err := s.record(ctx, id, key, value)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", id, err)
	}
	return v, nil
}

func (s *Store) record(ctx context.Context, id, key string, value []byte) ([]byte, error) {
	info, err := s.ledgerOwner(id, key)
	if err != nil {
		return nil, err
	}
	path := s.LedgerPath(id)
	lock := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR))
	defer lock.Close()
	if ok, err := lock.TryLockContext(ctx, ledgerPoll); err != nil || !ok {
		return nil, fmt.Errorf("lock: %w", errors.Join(err, context.Cause(ctx)))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	entries, whole, err := decodeLedger(data, info)
	if err != nil {
		return nil, err
	}
	if v, ok := entries[key]; ok {
		return v, nil
	}
	var line []byte
	if whole == 0 { // new, or bound to an earlier log of this id: start it afresh
		line = appendLedgerLine(line, ledgerHeader{Ledger: id, Created: info.Created})
	}
	line = appendLedgerLine(line, ledgerEntry{Key: key, Value: value})
	if err := appendLedger(path, whole, line, whole == 0); err != nil {
		return nil, err
	}
	if value == nil {
		value = []byte{}
	}
	return bytes.Clone(value), nil
}

// appendLedgerLine appends the line of v, a ledgerHeader or a
// ledgerEntry, with its newline. Neither can fail to encode: a string
// with invalid UTF-8 is written with U+FFFD (which CheckLedgerKey keeps
// out of keys), and bytes as base64.
func appendLedgerLine(dst []byte, v any) []byte {
	b, _ := json.Marshal(v)
	return append(append(dst, b...), '\n')
}

// appendLedger cuts path to its first whole bytes (a torn line goes)
// and appends line, fsynced; fresh (the file was empty or stale) fsyncs
// the directory too, so that the file itself survives a crash.
func appendLedger(path string, whole int64, line []byte, fresh bool) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(whole); err != nil {
		return err
	}
	if _, err := f.WriteAt(line, whole); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if fresh {
		return syncDir(filepath.Dir(path))
	}
	return nil
}

// Lookup implements [session.Ledger]. It reads under a shared lock, so it
// sees only entries whose Record has returned.
func (s *Store) Lookup(ctx context.Context, id, key string) ([]byte, bool, error) {
	v, ok, err := s.lookup(ctx, id, key)
	if err != nil {
		return nil, false, session.StoreError("jsonl", "ledger", id, err)
	}
	return v, ok, nil
}

func (s *Store) lookup(ctx context.Context, id, key string) ([]byte, bool, error) {
	info, err := s.ledgerOwner(id, key)
	if err != nil {
		return nil, false, err
	}
	path := s.LedgerPath(id)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil // nothing recorded yet; a lock would make the file
	}
	lock := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDONLY))
	defer lock.Close()
	if ok, err := lock.TryRLockContext(ctx, ledgerPoll); err != nil || !ok {
		return nil, false, fmt.Errorf("lock: %w", errors.Join(err, context.Cause(ctx)))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	entries, _, err := decodeLedger(data, info)
	if err != nil {
		return nil, false, err
	}
	v, ok := entries[key]
	return v, ok, nil
}

// ledgerOwner checks that key is session id's and returns the header of
// the session's log, which its ledger is bound to.
func (s *Store) ledgerOwner(id, key string) (session.Info, error) {
	if err := session.CheckLedgerKey(id, key); err != nil {
		return session.Info{}, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return session.Info{}, session.ErrClosed
	}
	info, err := readHeader(s.Path(id))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return session.Info{}, session.ErrNotFound
	case err != nil:
		return session.Info{}, err
	case info.ID != id:
		return session.Info{}, fmt.Errorf("%w: the header names %s", session.ErrCorrupt, info.ID)
	}
	return info, nil
}

// decodeLedger reads a ledger file bound to the log info heads: its
// entries, and the length of its whole lines (0 when it holds no header
// line of that log, so is to be started afresh). A torn last line is not
// read; any other line that is not an entry is an ErrCorrupt error.
func decodeLedger(data []byte, info session.Info) (map[string][]byte, int64, error) {
	entries := map[string][]byte{}
	end := bytes.LastIndexByte(data, '\n') + 1
	data = data[:end]
	first, rest, found := bytes.Cut(data, []byte{'\n'})
	if !found {
		return entries, 0, nil
	}
	var h ledgerHeader
	if err := json.Unmarshal(first, &h); err != nil {
		return nil, 0, &session.CorruptError{Line: 1, Err: fmt.Errorf("%w: not a ledger header", session.ErrMalformed)}
	}
	if h.Ledger != info.ID || !h.Created.Equal(info.Created) {
		return entries, 0, nil // an earlier log's of this id: stale
	}
	for n := 2; len(rest) > 0; n++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		var e ledgerEntry
		if err := json.Unmarshal(line, &e); err != nil || e.Key == "" {
			return nil, 0, &session.CorruptError{Line: n, Err: fmt.Errorf("%w: not a ledger entry", session.ErrMalformed)}
		}
		if _, dup := entries[e.Key]; dup {
			continue // never written; the first is the one Record returned
		}
		if e.Value == nil {
			e.Value = []byte{}
		}
		entries[e.Key] = e.Value
	}
	return entries, int64(end), nil
}

var _ session.Ledger = (*Store)(nil)
