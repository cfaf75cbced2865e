package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// Error codes of the tool results this package produces: a tool/result's
// error code in the log, for readers of logs and for tool/execute
// listeners that branch on an outcome.
const (
	// CodeEscape marks a path that leads outside the root.
	CodeEscape = "PATH_ESCAPE"
	// CodeNotFound marks a path that does not exist.
	CodeNotFound = "NOT_FOUND"
	// CodeBadArguments marks arguments that do not match the schema.
	CodeBadArguments = "BAD_ARGUMENTS"
	// CodeIO marks any other file system error.
	CodeIO = "IO_ERROR"
	// CodeNotRegular marks a named pipe, socket or device: opening or
	// reading one can block forever, so it is refused.
	CodeNotRegular = "NOT_A_REGULAR_FILE"
)

// DefaultMaxBytes is how much of a file read_file returns by default.
const DefaultMaxBytes = 64 << 10

// FS holds an open root. Its tools are safe for concurrent use; Close
// releases the root's directory handle.
type FS struct {
	root     *os.Root
	maxBytes int
}

// Open opens dir as the root of the tools. maxBytes bounds what read_file
// returns; zero means [DefaultMaxBytes].
func Open(dir string, maxBytes int) (*FS, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("tools/fs: open root: %w", err)
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return &FS{root: r, maxBytes: maxBytes}, nil
}

// Close closes the root.
func (f *FS) Close() error { return f.root.Close() }

// Tools returns the list_dir and read_file tools.
func (f *FS) Tools() []agentloop.Tool {
	return []agentloop.Tool{listDir{f}, readFile{f}}
}

type pathArgs struct {
	Path string `json:"path"`
}

// clean validates a model-supplied path and returns it in the form
// os.Root expects. The root itself refuses escapes; this only turns the
// cases a model can fix into clear messages.
func clean(raw json.RawMessage) (string, error) {
	var a pathArgs
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return "", &agentloop.ToolError{Code: CodeBadArguments, Message: "arguments must be {\"path\": string}: " + err.Error()}
	}
	p := a.Path
	if p == "" {
		p = "."
	}
	if filepath.IsAbs(p) || path.IsAbs(p) || strings.HasPrefix(p, `\`) {
		return "", &agentloop.ToolError{Code: CodeEscape, Message: fmt.Sprintf("path %q is absolute; use a path relative to the root", a.Path)}
	}
	return filepath.FromSlash(p), nil
}

// toolError maps a file system error to a tool error the model can act on.
func toolError(p string, err error) error {
	var pe *fs.PathError
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	switch {
	case strings.Contains(msg, "escapes from parent") || strings.Contains(msg, "path escapes"):
		return &agentloop.ToolError{Code: CodeEscape, Message: fmt.Sprintf("path %q leads outside the root", p)}
	case errors.Is(err, fs.ErrNotExist):
		return &agentloop.ToolError{Code: CodeNotFound, Message: fmt.Sprintf("path %q does not exist", p)}
	default:
		return &agentloop.ToolError{Code: CodeIO, Message: fmt.Sprintf("path %q: %s", p, msg)}
	}
}

// open opens p, a regular file or a directory, for reading. Anything else
// is refused: opening a named pipe blocks until a writer comes, and
// reading a device or a pipe may never end. The type is checked before
// opening, and again on the open file, which is opened non-blocking in
// case p was replaced in between.
func (f *FS) open(p string) (*os.File, error) {
	st, err := f.root.Stat(p)
	if err != nil {
		return nil, toolError(p, err)
	}
	if !readable(st.Mode()) {
		return nil, notRegular(p, st.Mode())
	}
	fh, err := f.root.OpenFile(p, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, toolError(p, err)
	}
	st, err = fh.Stat()
	if err != nil {
		_ = fh.Close()
		return nil, toolError(p, err)
	}
	if !readable(st.Mode()) {
		_ = fh.Close()
		return nil, notRegular(p, st.Mode())
	}
	// A regular file or directory is never pollable: reads on it block as
	// usual once O_NONBLOCK is cleared.
	if err := setBlocking(fh); err != nil {
		_ = fh.Close()
		return nil, toolError(p, err)
	}
	return fh, nil
}

func readable(m fs.FileMode) bool { return m.IsRegular() || m.IsDir() }

func notRegular(p string, m fs.FileMode) error {
	kind := "special file"
	switch {
	case m&fs.ModeNamedPipe != 0:
		kind = "named pipe"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	case m&fs.ModeDevice != 0:
		kind = "device"
	}
	return &agentloop.ToolError{Code: CodeNotRegular, Message: fmt.Sprintf("path %q is a %s, not a regular file or directory", p, kind)}
}

type listDir struct{ f *FS }

func (listDir) Spec() session.ToolSpec {
	return session.ToolSpec{
		Name:        "list_dir",
		Description: "List the entries of a directory under the workspace root. Directories end with a slash.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"directory path relative to the root; \".\" is the root"}},"required":["path"],"additionalProperties":false}`),
	}
}

func (listDir) ConcurrencySafe() bool { return true }

func (t listDir) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	p, err := clean(args)
	if err != nil {
		return "", err
	}
	d, err := t.f.open(p)
	if err != nil {
		return "", err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return "", toolError(p, err)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.Name())
		if e.IsDir() {
			b.WriteByte('/')
		}
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		return "(empty directory)", nil
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

type readFile struct{ f *FS }

func (readFile) Spec() session.ToolSpec {
	return session.ToolSpec{
		Name:        "read_file",
		Description: "Read a text file under the workspace root.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file path relative to the root"}},"required":["path"],"additionalProperties":false}`),
	}
}

func (readFile) ConcurrencySafe() bool { return true }

func (t readFile) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	p, err := clean(args)
	if err != nil {
		return "", err
	}
	fh, err := t.f.open(p)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return "", toolError(p, err)
	}
	if st.IsDir() {
		return "", &agentloop.ToolError{Code: CodeIO, Message: fmt.Sprintf("path %q is a directory; use list_dir", p)}
	}
	// A few bytes past the limit tell whether it cuts a character.
	buf, err := io.ReadAll(io.LimitReader(fh, int64(t.f.maxBytes)+utf8.UTFMax))
	if err != nil {
		return "", toolError(p, err)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if len(buf) > t.f.maxBytes {
		n := runeCut(buf, t.f.maxBytes)
		return string(buf[:n]) + fmt.Sprintf("\n[truncated: file is %d bytes, showing the first %d]", st.Size(), n), nil
	}
	return string(buf), nil
}

// runeCut returns n, or less when b[:n] would end inside a UTF-8
// character: the character's start, so that a truncated text does not
// end in a broken one. b holds the bytes after n as far as they were
// read; bytes that are not UTF-8 are cut where n says.
func runeCut(b []byte, n int) int {
	for s := n - 1; s >= 0 && s > n-utf8.UTFMax; s-- {
		if utf8.RuneStart(b[s]) {
			if _, size := utf8.DecodeRune(b[s:]); size > 1 && s+size > n {
				return s
			}
			break
		}
	}
	return n
}

var (
	_ agentloop.Tool            = listDir{}
	_ agentloop.Tool            = readFile{}
	_ agentloop.ConcurrencySafe = listDir{}
	_ agentloop.ConcurrencySafe = readFile{}
)
