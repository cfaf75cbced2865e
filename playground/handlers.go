package playground

import (
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"strings"

	"github.com/vigil-run/vigil/session"
)

//go:embed assets
var assets embed.FS

// maxBody bounds the JSON body of an action.
const maxBody = 1 << 20

func (s *Server) routes() {
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("POST /api/visitor", s.handleVisitor)
	mux.HandleFunc("GET /api/events", s.handleEvents)
	mux.HandleFunc("GET /api/sessions/{id}", s.handleSession)
	mux.HandleFunc("POST /api/control", action(s, func(v *visitor, b controlBody) (playState, error) {
		return v.control(strings.TrimSpace(b.Op))
	}))
	mux.HandleFunc("POST /api/send", action(s, (*visitor).send))
	mux.HandleFunc("POST /api/fork", action(s, forkAction))
	mux.HandleFunc("POST /api/replay", action(s, func(v *visitor, b sessionBody) (any, error) { return v.replay(b.Session) }))
	mux.HandleFunc("POST /api/verify", action(s, func(v *visitor, b sessionBody) (any, error) { return v.verify(b.Session) }))
	mux.HandleFunc("POST /api/decide", action(s, (*visitor).decide))
	s.mux = mux
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError maps err to a status: 404 for a session the page does not
// show, a visitor the playground does not keep or a tool call the session
// never made, 503 when it keeps too many, 400 for bad arguments (a denial
// "always for this session"), 409 for what the runtime refused (a fork
// inside an open turn, a seq the log does not have, a decision on a call
// not pending or already decided), 500 otherwise.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, errNotShown), errors.Is(err, errNoVisitor), errors.Is(err, session.ErrUnknownCall):
		status = http.StatusNotFound
	case errors.Is(err, errFull):
		status = http.StatusServiceUnavailable
	case errors.Is(err, errInvalid), errors.Is(err, ErrUnknownOp), errors.Is(err, session.ErrInvalidDecision):
		status = http.StatusBadRequest
	case errorsIsAny(err, session.ErrOpenTurn, session.ErrNotFound, session.ErrClosed,
		session.ErrNotSuspended, session.ErrNotPending, session.ErrAlreadyDecided):
		status = http.StatusConflict
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// decode reads a JSON action body. Only application/json is accepted: a
// page of another origin cannot send it without the browser asking this
// server first, so it cannot drive the playground behind the user's back.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "send application/json"})
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad request body: " + err.Error()})
		return false
	}
	return true
}

// handleVisitor makes a visitor: the page asks for one when it loads, and
// names it (?visitor=ID) in every request after.
func (s *Server) handleVisitor(w http.ResponseWriter, r *http.Request) {
	var body struct{}
	if !decode(w, r, &body) {
		return
	}
	v, err := s.newVisitor()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"visitor": v.id})
}

// visitorFor returns the visitor r names, or answers 404.
func (s *Server) visitorFor(w http.ResponseWriter, r *http.Request) (*visitor, bool) {
	v, err := s.visitorOf(r)
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	return v, true
}

func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	v, ok := s.visitorFor(w, r)
	if !ok {
		return
	}
	sv, ok := v.hub.snapshot(r.PathValue("id"))
	if !ok {
		writeError(w, errNotShown)
		return
	}
	writeJSON(w, http.StatusOK, sv)
}

// action serves a visitor's action: its JSON body decoded into B, fn's
// result written as JSON, an error as its status.
func action[B, R any](s *Server, fn func(*visitor, B) (R, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok := s.visitorFor(w, r)
		if !ok {
			return
		}
		var body B
		if !decode(w, r, &body) {
			return
		}
		res, err := fn(v, body)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

type controlBody struct {
	Op string `json:"op"`
}

type sessionBody struct {
	Session string `json:"session"`
}

type forkBody struct {
	Session string `json:"session"`
	Seq     *int64 `json:"seq"`
}

func forkAction(v *visitor, b forkBody) (map[string]any, error) {
	if b.Seq == nil {
		return nil, errors.Join(errInvalid, errors.New("seq is required"))
	}
	sv, err := v.fork(b.Session, *b.Seq)
	if err != nil {
		return nil, err
	}
	return map[string]any{"session": sv}, nil
}
