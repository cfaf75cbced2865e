package playground

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// Session kinds, as the page labels them.
const (
	kindDemo   = "demo"   // the scripted session Play runs
	kindFork   = "fork"   // a fork (live.Manager.Fork)
	kindForged = "forged" // a session seeded with a log minus one event
)

// hub holds the sessions a visitor's page shows, with the records
// published so far (for the demo session, those the pacer let through),
// and streams every change to the page's subscribers as server-sent
// events.
type hub struct {
	mu     sync.Mutex
	order  []string
	views  map[string]*view
	subs   map[chan []byte]struct{}
	play   playState
	closed bool
}

type view struct {
	info    session.Info
	kind    string
	label   string
	note    string
	records []session.Record
}

// sessionView is one session as the page receives it.
type sessionView struct {
	ID      string            `json:"id"`
	Kind    string            `json:"kind"`
	Label   string            `json:"label"`
	Note    string            `json:"note,omitempty"`
	Parent  *session.Parent   `json:"parent,omitempty"`
	Records []json.RawMessage `json:"records"`
	State   stateView         `json:"state"`
}

// playState is the state of the demo's player.
type playState struct {
	State   string `json:"state"` // idle, playing, paused, done, failed
	Session string `json:"session,omitempty"`
	Error   string `json:"error,omitempty"`
	// Rev numbers the states in the order they were set. The page gets
	// a state both as the answer to a control and as a play event, on two
	// connections: one arriving late (the answer "playing" after the event
	// "done") must not replace a newer one, so the page keeps the state
	// with the highest Rev.
	Rev uint64 `json:"rev"`
}

// subscriberBuffer bounds how far a page may lag; a slower one is
// dropped, and its EventSource reconnects to a fresh snapshot.
const subscriberBuffer = 1024

func newHub() *hub {
	return &hub{views: map[string]*view{}, subs: map[chan []byte]struct{}{}, play: playState{State: stateIdle}}
}

// frame encodes one server-sent event.
func frame(event string, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		// Every payload here is made of marshalable values.
		data, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", event, data)
}

// broadcastLocked sends f to every subscriber. h.mu is held.
func (h *hub) broadcastLocked(f []byte) {
	for ch := range h.subs {
		select {
		case ch <- f:
		default:
			delete(h.subs, ch)
			close(ch)
		}
	}
}

func (v *view) json() sessionView {
	info := v.info
	return sessionView{ID: info.ID, Kind: v.kind, Label: v.label, Note: v.note, Parent: info.Parent,
		Records: rawRecords(v.records), State: derive(v.records)}
}

// add starts showing s, with the records it has now, as kind with a
// label and a note.
func (h *hub) add(s *live.Session, kind, label, note string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if _, ok := h.views[s.ID()]; ok {
		return
	}
	v := &view{info: s.Info(), kind: kind, label: label, note: note, records: s.Records()}
	h.views[s.ID()] = v
	h.order = append(h.order, s.ID())
	h.broadcastLocked(frame("session", v.json()))
}

// recordEvent is the page's record event: one more record of a session and
// the state of the log up to it.
type recordEvent struct {
	Session string          `json:"session"`
	Record  json.RawMessage `json:"record"`
	State   stateView       `json:"state"`
}

// publish shows one more committed record of a session.
func (h *hub) publish(id string, r session.Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.views[id]
	if !ok || r.Seq() != int64(len(v.records)) {
		return
	}
	v.records = append(v.records[:len(v.records):len(v.records)], r)
	h.broadcastLocked(frame("record", recordEvent{Session: id, Record: r.Bytes(), State: derive(v.records)}))
}

// records returns the records of a session shown, as published.
func (h *hub) records(id string) (*view, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.views[id]
	if !ok {
		return nil, false
	}
	cp := *v
	return &cp, true
}

// snapshot returns a session as the page receives it.
func (h *hub) snapshot(id string) (sessionView, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.views[id]
	if !ok {
		return sessionView{}, false
	}
	return v.json(), true
}

// setPlay records and announces the player's state.
func (h *hub) setPlay(p playState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p.Rev = h.play.Rev + 1
	h.play = p
	h.broadcastLocked(frame("play", p))
}

func (h *hub) playState() playState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.play
}

// reset forgets every session shown and returns their ids.
func (h *hub) reset() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := h.order
	h.views = map[string]*view{}
	h.order = nil
	h.broadcastLocked(frame("reset", struct{}{}))
	return ids
}

// hello is the first event of a subscription: everything shown.
type hello struct {
	Sessions []sessionView `json:"sessions"`
	Play     playState     `json:"play"`
}

// subscribe returns a channel of events, starting with a hello, and a
// function that ends the subscription. The channel is closed when the
// subscriber falls too far behind or the hub closes.
func (h *hub) subscribe() (<-chan []byte, func()) {
	ch := make(chan []byte, subscriberBuffer)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(ch)
		return ch, func() {}
	}
	hi := hello{Sessions: make([]sessionView, 0, len(h.order)), Play: h.play}
	for _, id := range h.order {
		hi.Sessions = append(hi.Sessions, h.views[id].json())
	}
	ch <- frame("hello", hi)
	h.subs[ch] = struct{}{}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[ch]; ok {
			delete(h.subs, ch)
			close(ch)
		}
	}
}

// close ends every subscription and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
}
