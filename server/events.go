package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-run/vigil/session"
)

// heartbeat keeps an idle stream open through proxies and lets the server
// notice a client that went away.
const heartbeat = 15 * time.Second

// handleEvents streams session id's events with seq > after (all of
// them without after): as JSONL, one canonical record line each, ending at
// the current tail unless follow=true; or, to a client that accepts
// text/event-stream, as server-sent events that follow the log, each
// with its seq as id, so that a reconnecting EventSource's Last-Event-ID
// resumes after the last event it got, without loss or duplicates.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	id := admitted(r).ID
	q, err := parseEventsQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Look the session up first (its tail, not its whole log), so an
	// unknown one is a 404, not an empty stream.
	tail, err := s.tail(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if !q.follow {
		h.Set("Content-Type", "application/jsonl")
		w.WriteHeader(http.StatusOK)
		// The status is sent already: a failure ends the body early.
		if err := s.writeRecords(r.Context(), w, id, q.after+1, tail.Next); err != nil {
			s.log.Warn("reading a session's events failed", "session", id, "error", err)
		}
		return
	}
	s.streamEvents(w, r, id, q)
}

// eventsQuery is what a request for a session's events asks.
type eventsQuery struct {
	after  int64 // the events wanted have seq > after
	follow bool  // the stream follows the log past its current tail
	sse    bool  // as server-sent events rather than JSONL
}

// parseEventsQuery reads the query of an events request: after (or, from
// an EventSource that reconnects, Last-Event-ID) and follow, which a
// stream of server-sent events always does.
func parseEventsQuery(r *http.Request) (eventsQuery, error) {
	sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	name, raw := "after", r.URL.Query().Get("after")
	if last := r.Header.Get("Last-Event-ID"); sse && last != "" {
		name, raw = "Last-Event-ID", last
	}
	after, err := parseCursor(name, raw)
	if err != nil {
		return eventsQuery{}, err
	}
	follow, err := queryBool(r, "follow", false)
	if err != nil {
		return eventsQuery{}, err
	}
	return eventsQuery{after: after, follow: follow || sse, sse: sse}, nil
}

// streamEvents answers a following request: the records as the log
// grows, flushed in batches, with a heartbeat while it is idle, until the
// client goes away, a write blocks too long or following fails.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, id string, q eventsQuery) {
	h := w.Header()
	if q.sse {
		h.Set("Content-Type", "text/event-stream")
		h.Set("X-Accel-Buffering", "no")
	} else {
		h.Set("Content-Type", "application/jsonl")
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if q.sse {
		_, _ = w.Write([]byte("retry: 1000\n\n"))
	}
	_ = rc.Flush()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	recs, errc := s.pump(ctx, id, q.after+1)
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	var buf []byte
	for {
		select {
		case rec, ok := <-recs:
			if !ok {
				s.endStream(w, rc, r, id, errc, q.sse)
				return
			}
			buf = frameReady(frame(buf[:0], rec, q.sse), recs, q.sse)
			// A client that stops reading is let go once a write to it
			// blocks longer than the stream write timeout.
			_ = rc.SetWriteDeadline(time.Now().Add(s.opts.StreamWriteTimeout))
			if _, err := w.Write(buf); err != nil {
				return
			}
		case <-tick.C:
			_ = rc.SetWriteDeadline(time.Now().Add(s.opts.StreamWriteTimeout))
			if q.sse {
				if _, err := w.Write([]byte(": heartbeat\n\n")); err != nil {
					return
				}
			}
		case <-ctx.Done():
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// pump follows session id's records from seq from on, on a goroutine of
// its own, until ctx is done: they come on the first channel, closed at
// the end, and the error that ended following, if one did, on the
// second, before the first closes.
func (s *Server) pump(ctx context.Context, id string, from int64) (<-chan session.Record, <-chan error) {
	recs := make(chan session.Record, 64)
	errc := make(chan error, 1)
	go func() {
		defer close(recs)
		for rec, err := range s.follow(ctx, id, from) {
			if err != nil {
				errc <- err
				return
			}
			select {
			case recs <- rec:
			case <-ctx.Done():
				return
			}
		}
	}()
	return recs, errc
}

// frameReady frames onto buf the records already waiting in recs, up to
// 64 KiB, so they are written with one flush.
func frameReady(buf []byte, recs <-chan session.Record, sse bool) []byte {
	for len(buf) < 64<<10 {
		select {
		case rec, ok := <-recs:
			if !ok {
				return buf
			}
			buf = frame(buf, rec, sse)
		default:
			return buf
		}
	}
	return buf
}

// endStream ends a stream whose records ran out: when following failed,
// it logs why and, as server-sent events, says why as an event of its
// own kind (the status is sent already).
func (s *Server) endStream(w http.ResponseWriter, rc *http.ResponseController, r *http.Request, id string, errc <-chan error, sse bool) {
	select {
	case err := <-errc:
		s.log.Warn("following a session failed", "session", id, "error", err)
		if sse {
			e := s.publicError(r, err)
			data, _ := json.Marshal(e)
			_, _ = fmt.Fprintf(w, "event: error\ndata: %s\n\n", data)
			_ = rc.Flush()
		}
	default:
	}
}

// writeRecords writes session id's records from seq from to seq end
// (excluded) to w as JSONL, one by one as the store yields them: the log
// is never held whole.
func (s *Server) writeRecords(ctx context.Context, w io.Writer, id string, from, end int64) error {
	if from >= end {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var buf []byte
	for rec, err := range s.follow(ctx, id, from) {
		if err != nil {
			return err
		}
		if rec.Seq() >= end {
			break
		}
		buf = rec.AppendLine(buf[:0])
		if _, err := w.Write(buf); err != nil || rec.Seq() == end-1 {
			return err
		}
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return fmt.Errorf("the events of %s ended before seq %d", id, end-1)
}

// follow streams session id's records from seq from on
// ([vigil.Runtime.Follow]).
func (s *Server) follow(ctx context.Context, id string, from int64) iter.Seq2[session.Record, error] {
	return s.rt.Follow(ctx, id, from)
}

// frame appends rec as the stream sends it: its canonical line, or a
// server-sent event whose id is its seq and whose data is that line.
func frame(buf []byte, rec session.Record, sse bool) []byte {
	if !sse {
		return rec.AppendLine(buf)
	}
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, rec.Seq(), 10)
	buf = append(buf, "\ndata: "...)
	buf = rec.AppendLine(buf)
	return append(buf, '\n')
}
