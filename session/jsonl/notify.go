package jsonl

import (
	"path/filepath"
	"sync"
)

// dirNote carries the in-process wake-ups between the stores open on one
// directory: a queue change or a released writer wakes the claims waiting
// in any of them at once, and an append wakes the session's followers.
// Other processes' changes are seen by polling (see pollInterval).
type dirNote struct {
	mu     sync.Mutex
	refs   int
	queue  chan struct{}            // closed at a queue change or a release
	follow map[string]chan struct{} // session -> closed at its next append
}

var notes = struct {
	mu sync.Mutex
	m  map[string]*dirNote
}{m: map[string]*dirNote{}}

// noteKey names dir the same way from every store open on it.
func noteKey(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return filepath.Clean(dir)
}

// openNote returns the note of dir, counting the store that uses it.
func openNote(dir string) *dirNote {
	notes.mu.Lock()
	defer notes.mu.Unlock()
	key := noteKey(dir)
	n := notes.m[key]
	if n == nil {
		n = &dirNote{queue: make(chan struct{}), follow: map[string]chan struct{}{}}
		notes.m[key] = n
	}
	n.refs++
	return n
}

// closeNote drops a store's use of the note of dir.
func closeNote(dir string, n *dirNote) {
	notes.mu.Lock()
	defer notes.mu.Unlock()
	n.refs--
	if key := noteKey(dir); n.refs <= 0 && notes.m[key] == n {
		delete(notes.m, key)
	}
}

// queueChanged returns the channel closed at the next queue change. Take
// it before looking at the queue, so that a change made meanwhile is not
// missed.
func (n *dirNote) queueChanged() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.queue
}

func (n *dirNote) wakeQueue() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.queue)
	n.queue = make(chan struct{})
}

// appendWait returns the channel closed at the next append to id.
func (n *dirNote) appendWait(id string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch := n.follow[id]
	if ch == nil {
		ch = make(chan struct{})
		n.follow[id] = ch
	}
	return ch
}

// appended wakes the followers of id, if any wait.
func (n *dirNote) appended(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch := n.follow[id]; ch != nil {
		close(ch)
		delete(n.follow, id)
	}
}
