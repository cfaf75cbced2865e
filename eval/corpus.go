package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// Source is one recorded session of a corpus: its id, and the file it
// is read from ("" for the store).
type Source struct {
	ID  string `json:"session"`
	Log string `json:"log,omitempty"`
}

func (s Source) String() string {
	if s.Log != "" {
		return s.Log
	}
	return s.ID
}

// ErrNoSessions is the error of a corpus that names no session.
var ErrNoSessions = errors.New("eval: the corpus names no session")

// Resolve lists the corpus's sessions: the ids, then the files (each
// directory's *.jsonl in name order), then the query's matches, each
// session once (the first naming wins).
func (c *Corpus) Resolve(ctx context.Context, store session.Store) ([]Source, error) {
	var out []Source
	seen := map[string]bool{}
	add := func(s Source) {
		if !seen[s.ID] {
			seen[s.ID] = true
			out = append(out, s)
		}
	}
	for _, id := range c.Sessions {
		if !session.ValidID(id) {
			return nil, fmt.Errorf("eval: corpus: %q is not a session id", id)
		}
		add(Source{ID: id})
	}
	for _, f := range c.Files {
		files, err := logFiles(f)
		if err != nil {
			return nil, err
		}
		dir := len(files) > 1 || files[0] != f
		for _, path := range files {
			info, err := headerOf(path)
			if err != nil {
				return nil, err
			}
			if dir && info.By == By {
				continue // an eval's own session in a store directory
			}
			add(Source{ID: info.ID, Log: path})
		}
	}
	if c.Query != nil {
		if store == nil {
			return nil, errors.New("eval: corpus: a query needs a store")
		}
		infos, err := store.List(ctx)
		var le *session.ListError
		if err != nil && !errors.As(err, &le) {
			return nil, fmt.Errorf("eval: corpus: %w", err)
		}
		n := 0
		for _, info := range infos {
			if !c.Query.Match(info) {
				continue
			}
			if c.Query.Limit > 0 && n == c.Query.Limit {
				break
			}
			n++
			add(Source{ID: info.ID})
		}
	}
	if len(out) == 0 {
		return nil, ErrNoSessions
	}
	return out, nil
}

// Match reports whether the query selects a stored session.
func (q *Query) Match(info session.Info) bool {
	switch {
	case info.By == By || info.Parent != nil:
		return false
	case q.Tenant != "" && info.TenantOf() != q.Tenant:
		return false
	case !q.Since.IsZero() && info.Created.Before(q.Since.Time):
		return false
	case !q.Until.IsZero() && !info.Created.Before(q.Until.Time):
		return false
	}
	return true
}

// logFiles is path, or the *.jsonl files of the directory path.
func logFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("eval: corpus: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("eval: corpus: %w", err)
	}
	slices.Sort(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("eval: corpus: %s: no session logs (*.jsonl) in the directory", path)
	}
	return files, nil
}

// headerOf reads the header of the log at path.
func headerOf(path string) (session.Info, error) {
	log, err := readFile(path)
	if err != nil {
		return session.Info{}, err
	}
	return log.Info, nil
}

func readFile(path string) (*session.Log, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	log, err := session.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("eval: %s: %w", path, err)
	}
	return log, nil
}

// load reads a source's log and refuses one that fails verify: a
// recording that breaks the log's rules is no ground truth.
func load(ctx context.Context, store session.Store, s Source) (*session.Log, error) {
	var log *session.Log
	var err error
	if s.Log != "" {
		log, err = readFile(s.Log)
	} else if store == nil {
		err = errors.New("eval: no store to read sessions from")
	} else {
		log, err = store.Load(ctx, s.ID)
	}
	if err != nil {
		return nil, err
	}
	size := 128
	for _, r := range log.Records {
		size += r.LineLen()
	}
	data := session.AppendHeaderLine(make([]byte, 0, size), log.Info)
	for _, r := range log.Records {
		data = r.AppendLine(data)
	}
	rep, err := invariants.Verify(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("eval: %s: %w", s, err)
	}
	if len(rep.Violations) > 0 {
		msgs := make([]string, len(rep.Violations))
		for i, v := range rep.Violations {
			msgs[i] = v.String()
		}
		return nil, fmt.Errorf("eval: %s: refused: the log fails verify: %s", s, strings.Join(msgs, "; "))
	}
	return log, nil
}
