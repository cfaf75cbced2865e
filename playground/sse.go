package playground

import (
	"net/http"
	"time"
)

// heartbeat keeps idle event streams open through proxies and lets the
// server notice a page that went away.
const heartbeat = 15 * time.Second

// handleEvents streams a visitor's events (server-sent events): a hello
// with every session shown and the player's state, then each session
// created or named, each record published, each change of the player's
// state, and resets. A page that falls too far behind is cut off; its
// EventSource reconnects and starts from a fresh hello.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	v, ok := s.visitorFor(w, r)
	if !ok {
		return
	}
	// An open stream keeps its visitor: the page is still there.
	s.streaming(v, 1)
	defer s.streaming(v, -1)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ch, cancel := v.hub.subscribe()
	defer cancel()
	if _, err := w.Write([]byte("retry: 1000\n\n")); err != nil {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case f, ok := <-ch:
			if !ok {
				return
			}
			if _, err := w.Write(f); err != nil {
				return
			}
		case <-tick.C:
			if _, err := w.Write([]byte(": heartbeat\n\n")); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
