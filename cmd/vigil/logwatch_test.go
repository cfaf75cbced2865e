package main

import (
	"strings"
	"sync"
	"time"
)

// logWatch is a process's stderr, kept, with a way to wait for a line.
type logWatch struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{}
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

func (l *logWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *logWatch) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until the log holds s, up to d.
func (l *logWatch) waitFor(s string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		l.mu.Lock()
		found, changed := strings.Contains(l.b.String(), s), l.changed
		l.mu.Unlock()
		if found {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}
