package live

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/vigil-run/vigil/session"
)

// Hot sessions. A process that runs turns on a session (under its lease:
// [OpenLeased], [OpenHeld]) keeps it open once the turn is over, parked,
// instead of closing it: the next turn on it, here, then costs what the
// turn adds, not a decode, fold and check of the whole log. Parked
// sessions are flushed and the store's hold on them is released, so
// another process may take the lease and append; before a parked session
// is reused, under the lease again, its length and last record are
// compared with the store's tail ([session.LoadTail]), and a copy that
// is behind is closed and the log opened afresh: a parked copy never
// serves a stale log. The parked sessions are bounded by count and by
// the bytes of their logs; past either bound the least recently used are
// closed (their lifetimes end, see [Session.Close]).

// HotLimits bound the sessions a manager keeps parked between turns.
type HotLimits struct {
	// Sessions is how many sessions stay parked at most; 0 parks none:
	// every turn's session is closed as the turn ends.
	Sessions int
	// Bytes bounds the summed length of the parked sessions' logs, as
	// encoded (their heap is a small multiple of it); 0 is no bound but
	// Sessions.
	Bytes int64
}

// DefaultHotLimits are a manager's limits unless [WithHotLimits] or
// [Manager.SetHotLimits] says otherwise.
var DefaultHotLimits = HotLimits{Sessions: 64, Bytes: 64 << 20}

// WithHotLimits sets the limits of the manager's parked sessions.
func WithHotLimits(l HotLimits) ManagerOption {
	return func(m *Manager) { m.hot.lim = l }
}

// SetHotLimits changes the limits of the manager's parked sessions,
// closing those past the new ones.
func (m *Manager) SetHotLimits(l HotLimits) {
	m.hot.mu.Lock()
	m.hot.lim = l
	victims := m.hot.overLocked()
	m.hot.mu.Unlock()
	closeAll(victims)
}

// hot is the LRU list of a manager's parked sessions.
type hot struct {
	mu    sync.Mutex
	lim   HotLimits
	lru   list.List // of *Session; the front was parked last
	at    map[*Session]*list.Element
	bytes int64 // the parked sessions' sizes when parked
}

// park keeps s open once its turn is over: flushed (or its last batch
// handed to the end of its lease, see parkBatch), the store's hold on it
// released, at the front of the LRU list; the sessions past the
// limits are closed. With no room at all s is closed.
func (m *Manager) park(ctx context.Context, s *Session) error {
	m.hot.mu.Lock()
	room := m.hot.lim.Sessions > 0 && (m.hot.lim.Bytes <= 0 || s.Size() <= m.hot.lim.Bytes)
	m.hot.mu.Unlock()
	if !room || s.isClosed() {
		return s.Close(ctx)
	}
	batched, err := s.parkBatch(ctx)
	if !batched {
		err = s.Flush(ctx)
	}
	if r, ok := m.store.(session.Releaser); ok {
		if e := r.Release(s.info.ID); e != nil {
			err = errors.Join(err, fmt.Errorf("session %s: release: %w", s.info.ID, e))
		}
	}
	if err != nil {
		// A session the store failed to take is not worth keeping.
		return errors.Join(err, s.Close(ctx))
	}
	m.hot.mu.Lock()
	if m.hot.at == nil {
		m.hot.at = map[*Session]*list.Element{}
	}
	if _, dup := m.hot.at[s]; !dup {
		m.hot.at[s] = m.hot.lru.PushFront(s)
		s.parkedSize = s.Size()
		m.hot.bytes += s.parkedSize
	}
	victims := m.hot.overLocked()
	m.hot.mu.Unlock()
	closeAll(victims)
	return nil
}

// take removes s from the parked sessions, reporting whether it was
// parked: then the caller, which holds its lease, may reuse it once it
// checked it against the store (see [Manager.current]).
func (m *Manager) take(s *Session) bool {
	m.hot.mu.Lock()
	defer m.hot.mu.Unlock()
	return m.hot.removeLocked(s)
}

func (h *hot) removeLocked(s *Session) bool {
	e, ok := h.at[s]
	if !ok {
		return false
	}
	h.lru.Remove(e)
	delete(h.at, s)
	h.bytes -= s.parkedSize
	return true
}

// overLocked removes and returns the least recently parked sessions past
// the limits, for the caller to close once h.mu is released.
func (h *hot) overLocked() []*Session {
	var out []*Session
	for h.lru.Len() > 0 && (h.lru.Len() > h.lim.Sessions || h.lim.Bytes > 0 && h.bytes > h.lim.Bytes) {
		s := h.lru.Back().Value.(*Session)
		h.removeLocked(s)
		out = append(out, s)
	}
	return out
}

// closeAll ends the lifetimes of parked sessions (see retire).
func closeAll(ss []*Session) {
	for _, s := range ss {
		s.retire()
	}
}

// retire closes a session taken off the parked list. It was flushed and
// the store's hold on it released when it was parked, so closing it
// releases nothing: the store's hold may be another opener's lease by
// now.
func (s *Session) retire() {
	s.m.forget(s)
	s.m.forgetStored(s.info.ID)
	s.abort()
}

// forgetStored tells the store that session id is closed here (see
// [session.Forgetter]), unless another copy of it is live.
func (m *Manager) forgetStored(id string) {
	f, ok := m.store.(session.Forgetter)
	if !ok {
		return
	}
	if _, live := m.Get(id); !live {
		f.Forget(id)
	}
}

// current reports whether the live session s still holds the whole
// stored log: the store's tail has s's length and ends with s's last
// record, under the same header.
func (m *Manager) current(ctx context.Context, s *Session) (bool, error) {
	t, err := session.LoadTail(ctx, m.store, s.info.ID)
	if err != nil {
		return false, err
	}
	if t.Next != int64(s.Len()) || !t.Info.Created.Equal(s.info.Created) {
		return false, nil
	}
	if t.Next == 0 {
		return true, nil
	}
	mine, ok := s.last()
	theirs, found := t.At(t.Next - 1)
	if !found {
		// A tail holds records from the last turn/start on: a log
		// without a turn is told apart by its length alone.
		return ok, nil
	}
	return ok && sameRecord(mine, theirs), nil
}

// sameRecord reports whether a and b are the same record, as far as two
// copies of one log can tell them apart cheaply.
func sameRecord(a, b session.Record) bool {
	return a.Seq() == b.Seq() && a.Type() == b.Type() && a.Time().Equal(b.Time()) && a.LineLen() == b.LineLen()
}
