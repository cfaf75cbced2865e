package jsonl

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// dirNote carries the in-process wake-ups between the stores open on one
// directory: a queue change or a released writer wakes the claims waiting
// in any of them at once, and an append wakes the session's followers.
// Other processes' changes are seen by polling (see pollInterval): a
// claim polls the queue, and the note's one poller, running while any
// session is followed, looks at the size of each followed session's file.
type dirNote struct {
	mu      sync.Mutex
	refs    int
	queue   chan struct{}            // closed at a queue change or a release
	follow  map[string]chan struct{} // session -> closed at its next append
	watched map[string]*watched      // the followed sessions
	stop    chan struct{}            // closed to stop the poller; nil when none runs
	polls   int                      // the pollers started (for the tests)
}

// watched is a followed session as the poller sees it.
type watched struct {
	id, path  string
	followers int
	size      int64 // at the last poll; -1 before the first
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
		n = &dirNote{queue: make(chan struct{}), follow: map[string]chan struct{}{}, watched: map[string]*watched{}}
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
	n.appendedLocked(id)
}

func (n *dirNote) appendedLocked(id string) {
	if ch := n.follow[id]; ch != nil {
		close(ch)
		delete(n.follow, id)
	}
}

// watch counts a follower of session id, whose file is path, starting the
// poller if none runs; the function returned drops it, stopping the
// poller after the last one.
func (n *dirNote) watch(id, path string) (unwatch func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w := n.watched[id]
	if w == nil {
		w = &watched{id: id, path: path, size: -1}
		n.watched[id] = w
	}
	w.followers++
	if n.stop == nil {
		n.stop = make(chan struct{})
		n.polls++
		go n.poll(n.stop)
	}
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if w.followers--; w.followers == 0 {
			delete(n.watched, id)
		}
		if len(n.watched) == 0 && n.stop != nil {
			close(n.stop)
			n.stop = nil
		}
	}
}

// poll wakes the followers of each watched session whose file changed
// size since the last look (another process appended), until stop.
func (n *dirNote) poll(stop <-chan struct{}) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	var batch []*watched
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		n.mu.Lock()
		batch = batch[:0]
		for _, w := range n.watched {
			batch = append(batch, w)
		}
		n.mu.Unlock()
		for _, w := range batch {
			size := int64(-1)
			if fi, err := os.Stat(w.path); err == nil {
				size = fi.Size()
			}
			n.mu.Lock()
			// w may have been dropped meanwhile.
			if size != w.size && n.watched[w.id] == w {
				w.size = size
				n.appendedLocked(w.id)
			}
			n.mu.Unlock()
		}
	}
}
