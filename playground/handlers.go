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
	mux.HandleFunc("POST /api/control", s.handleControl)
	mux.HandleFunc("POST /api/send", s.handleSend)
	mux.HandleFunc("POST /api/fork", s.handleFork)
	mux.HandleFunc("POST /api/replay", s.handleReplay)
	mux.HandleFunc("POST /api/verify", s.handleVerify)
	mux.HandleFunc("POST /api/decide", s.handleDecide)
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

func (s *Server) handleControl(w http.ResponseWriter, r *http.Request) {
	v, ok := s.visitorFor(w, r)
	if !ok {
		return
	}
	var body struct {
		Op string `json:"op"`
	}
	if !decode(w, r, &body) {
		return
	}
	st, err := v.control(strings.TrimSpace(body.Op))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	v, ok := s.visitorFor(w, r)
	if !ok {
		return
	}
	var body sendRequest
	if !decode(w, r, &body) {
		return
	}
	res, err := v.send(body)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleFork(w http.ResponseWriter, r *http.Request) {
	v, ok := s.visitorFor(w, r)
	if !ok {
		return
	}
	var body struct {
		Session string `json:"session"`
		Seq     *int64 `json:"seq"`
	}
	if !decode(w, r, &body) {
		return
	}
	if body.Seq == nil {
		writeError(w, errors.Join(errInvalid, errors.New("seq is required")))
		return
	}
	sv, err := v.fork(body.Session, *body.Seq)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": sv})
}

type sessionBody struct {
	Session string `json:"session"`
}

func (s *Server) handleReplay(w http.ResponseWriter, r *http.Request) {
	v, ok := s.visitorFor(w, r)
	if !ok {
		return
	}
	var body sessionBody
	if !decode(w, r, &body) {
		return
	}
	res, err := v.replay(body.Session)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	v, ok := s.visitorFor(w, r)
	if !ok {
		return
	}
	var body sessionBody
	if !decode(w, r, &body) {
		return
	}
	res, err := v.verify(body.Session)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleDecide(w http.ResponseWriter, r *http.Request) {
	v, ok := s.visitorFor(w, r)
	if !ok {
		return
	}
	var body decideRequest
	if !decode(w, r, &body) {
		return
	}
	res, err := v.decide(body)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
