package playground

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-run/vigil/session/live"
)

// Visitors. Every page load is a visitor with its own demo: its own demo
// session and player, the sessions it forked or forged, and the event
// stream of what it shows. The runtime (the bus, the store, the invariants
// plugin) is shared; what a visitor sees and drives is not.
const (
	// visitorIdle is how long a visitor is kept with no open event stream
	// and no request: a tab closed, or a browser gone to sleep.
	visitorIdle = 15 * time.Minute
	// maxVisitors bounds the visitors kept. A new one beyond it evicts
	// the least recently seen visitor without an open event stream.
	maxVisitors = 64
	// sweepEvery is how often idle visitors are looked for.
	sweepEvery = time.Minute
)

var (
	// errNoVisitor: the request names no visitor the playground keeps.
	errNoVisitor = errors.New("playground: no such visitor (idle too long, or the server restarted): reload the page")
	// errFull: every visitor kept has an open page.
	errFull = errors.New("playground: too many open pages")
)

// visitor is one page load's playground.
type visitor struct {
	id  string
	srv *Server
	hub *hub

	// act serializes the visitor's actions (play control, send, fork,
	// replay, verify): one experiment at a time keeps their results
	// readable. gone is set under it when the visitor is disposed, and
	// every action checks it first.
	act  sync.Mutex
	gone atomic.Bool
	pl   player

	// Guarded by srv.vmu.
	lastSeen time.Time
	streams  int // open event streams
}

func newVisitorID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// lock takes the visitor's action lock, unless it was disposed.
func (v *visitor) lock() error {
	v.act.Lock()
	if v.gone.Load() {
		v.act.Unlock()
		return errNoVisitor
	}
	return nil
}

// newVisitor makes a visitor, evicting idle ones (and, at maxVisitors,
// the least recently seen one without an open page).
func (s *Server) newVisitor() (*visitor, error) {
	s.vmu.Lock()
	if s.closed {
		s.vmu.Unlock()
		return nil, errNoVisitor
	}
	now := s.now()
	evicted := s.expiredLocked(now)
	if len(s.visitors) >= maxVisitors {
		var lru *visitor
		for _, v := range s.visitors {
			if v.streams == 0 && (lru == nil || v.lastSeen.Before(lru.lastSeen)) {
				lru = v
			}
		}
		if lru == nil {
			s.vmu.Unlock()
			s.dispose(evicted)
			return nil, errFull
		}
		s.removeLocked(lru)
		evicted = append(evicted, lru)
	}
	v := &visitor{id: newVisitorID(), srv: s, hub: newHub(), lastSeen: now}
	s.visitors[v.id] = v
	s.vmu.Unlock()
	s.dispose(evicted)
	return v, nil
}

// visitorOf returns the visitor r names (its visitor query parameter),
// and marks it seen.
func (s *Server) visitorOf(r *http.Request) (*visitor, error) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	v, ok := s.visitors[r.URL.Query().Get("visitor")]
	if !ok {
		return nil, errNoVisitor
	}
	v.lastSeen = s.now()
	return v, nil
}

// streaming counts an event stream of v open (delta 1) or closed (-1).
func (s *Server) streaming(v *visitor, delta int) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	v.streams += delta
	v.lastSeen = s.now()
}

// sweep disposes the visitors idle for longer than visitorIdle.
func (s *Server) sweep() {
	s.vmu.Lock()
	evicted := s.expiredLocked(s.now())
	s.vmu.Unlock()
	s.dispose(evicted)
}

// expiredLocked removes the idle visitors and returns them. s.vmu is held.
func (s *Server) expiredLocked(now time.Time) []*visitor {
	var out []*visitor
	for _, v := range s.visitors {
		if v.streams == 0 && now.Sub(v.lastSeen) > visitorIdle {
			s.removeLocked(v)
			out = append(out, v)
		}
	}
	return out
}

// removeLocked forgets v and the sessions it owns. s.vmu is held.
func (s *Server) removeLocked(v *visitor) {
	delete(s.visitors, v.id)
	for id, o := range s.owners {
		if o == v {
			delete(s.owners, id)
		}
	}
}

// dispose stops the visitors' demos, closes their sessions and ends their
// event streams. s.vmu is not held: a demo being stopped reaches
// ownerOf from its commits.
func (s *Server) dispose(vs []*visitor) {
	for _, v := range vs {
		v.act.Lock()
		if !v.gone.Swap(true) {
			v.pl.stop()
			v.closeSessions()
			v.hub.close()
		}
		v.act.Unlock()
	}
}

// track shows sess to v, as kind with a label and a note, and routes its
// commits to v.
func (s *Server) track(v *visitor, sess *live.Session, kind, label, note string) {
	s.vmu.Lock()
	s.owners[sess.ID()] = v
	s.vmu.Unlock()
	v.hub.add(sess, kind, label, note)
}

// ownerOf returns the visitor a session is shown to, or nil.
func (s *Server) ownerOf(id string) *visitor {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	return s.owners[id]
}

// isDemo reports whether id is the demo session of a visitor.
func (s *Server) isDemo(id string) bool {
	v := s.ownerOf(id)
	return v != nil && v.pl.isDemo(id)
}

// closeSessions forgets the sessions v shows and closes them: a long
// demo does not accumulate every experiment's session. v.act is held.
func (v *visitor) closeSessions() {
	s := v.srv
	ids := v.hub.reset()
	s.vmu.Lock()
	for _, id := range ids {
		delete(s.owners, id)
	}
	s.vmu.Unlock()
	for _, id := range ids {
		if sess, ok := s.mgr.Get(id); ok {
			if err := sess.Close(s.base); err != nil {
				s.opts.Logger.Warn("closing a session", "session", id, "error", err)
			}
		}
	}
}

// janitor sweeps idle visitors until the server closes.
func (s *Server) janitor(done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.base.Done():
			return
		case <-t.C:
			s.sweep()
		}
	}
}
