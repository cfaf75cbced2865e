package mcp

import (
	"bytes"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// maxLine bounds a logged stderr line; the rest of a longer line is
// logged as further lines.
const maxLine = 4096

// lineLogger logs a subprocess's stderr line by line: servers write their
// diagnostics there, and stdout is the protocol.
type lineLogger struct {
	log hclog.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) < maxLine {
				return len(p), nil
			}
			i = maxLine
		}
		w.emit(w.buf[:i])
		if i < len(w.buf) && w.buf[i] == '\n' {
			i++
		}
		w.buf = w.buf[i:]
	}
}

// flush logs a last line without its newline.
func (w *lineLogger) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}

func (w *lineLogger) emit(line []byte) {
	w.log.Info("server stderr", "line", string(bytes.TrimRight(line, "\r")))
}
