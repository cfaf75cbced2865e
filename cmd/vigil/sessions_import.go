package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// sessionsImport reads session logs in the JSONL format (what `vigil
// sessions export` writes; several may follow one another) and stores each
// under its own id, header and records unchanged, in the composition's
// store: exporting it again gives the same bytes. It prints the id of each
// imported session. A session id the store already has is not imported; a
// torn last line (a crash) is dropped with a warning; a corrupt log is not
// imported. Every log that can be imported is; the others' errors are
// returned together.
func sessionsImport(ctx context.Context, e *env, mgr *live.Manager, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	logs := splitLogs(data)
	if len(logs) == 0 {
		return usagef("no session log on the input")
	}
	store := mgr.Store()
	var errs []error
	for _, l := range logs {
		id, err := importLog(ctx, e, store, l.data)
		if err != nil {
			if l.line > 1 {
				err = fmt.Errorf("the log at line %d: %w", l.line, err)
			}
			errs = append(errs, err)
			continue
		}
		fmt.Fprintln(e.stdout, id)
	}
	return errors.Join(errs...)
}

// rawLog is one log of the input and the line it starts at.
type rawLog struct {
	line int
	data []byte
}

// splitLogs cuts the input where a line is a session header.
func splitLogs(data []byte) []rawLog {
	var out []rawLog
	start, startLine := 0, 1
	line := 1
	for off := 0; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			break
		}
		if off > start && bytes.HasPrefix(data[off:], []byte(`{"type":"session"`)) {
			if _, err := session.DecodeHeader(data[off : off+end]); err == nil {
				out = append(out, rawLog{startLine, data[start:off]})
				start, startLine = off, line
			}
		}
		off += end + 1
	}
	if start < len(data) && len(bytes.TrimSpace(data[start:])) > 0 {
		out = append(out, rawLog{startLine, data[start:]})
	}
	return out
}

// importLog stores one log and returns its id.
func importLog(ctx context.Context, e *env, store session.Store, data []byte) (string, error) {
	log, err := session.DecodeBytes(data)
	if err != nil && !(errors.Is(err, session.ErrTornTail) && log != nil) {
		return "", err
	}
	id := log.Info.ID
	if log.Torn > 0 {
		fmt.Fprintf(e.stderr, "session %s: dropped a torn last line (%d bytes)\n", id, log.Torn)
	}
	if err := store.Create(ctx, log.Info); err != nil {
		if errors.Is(err, session.ErrExists) {
			return "", fmt.Errorf("session %s already exists in this store; not imported", id)
		}
		return "", fmt.Errorf("session %s: %w", id, err)
	}
	if err := store.Append(ctx, id, 0, log.Records); err != nil {
		return "", fmt.Errorf("session %s: %w", id, err)
	}
	if f, ok := store.(session.Flusher); ok {
		if err := f.Flush(ctx, id); err != nil {
			return "", fmt.Errorf("session %s: %w", id, err)
		}
	}
	if r, ok := store.(session.Releaser); ok {
		if err := r.Release(id); err != nil {
			return "", fmt.Errorf("session %s: %w", id, err)
		}
	}
	return id, nil
}
