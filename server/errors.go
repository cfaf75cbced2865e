package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// Error is the body of every error response. Code is stable, for
// programs to branch on; Message is for people.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Position locates a syntax error in a malformed request body.
	Position *Position `json:"position,omitempty"`

	status       int
	invalidToken bool // a 401 for credentials given but refused
}

// Position is a place in a request body: a byte offset, and the line and
// column (both from 1) it is at.
type Position struct {
	Offset int64 `json:"offset"`
	Line   int   `json:"line"`
	Column int   `json:"column"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// The codes of [Error].
const (
	CodeBadRequest       = "bad_request"
	CodeMalformedJSON    = "malformed_json"
	CodeTooLarge         = "too_large"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeSuspended        = "suspended"
	CodeBusy             = "busy"
	CodeNotPending       = "not_pending"
	CodeAlreadyDecided   = "already_decided"
	CodeInvalidDecision  = "invalid_decision"
	CodeConflict         = "conflict"
	CodeNoQueue          = "no_queue"
	CodeInternal         = "internal"
	// CodeWrongHost (421): the Host header names another server.
	CodeWrongHost = "wrong_host"
	// CodeUnsupportedMediaType (415): a POST that is not application/json.
	CodeUnsupportedMediaType = "unsupported_media_type"
)

// CodeDecided: the call was decided already, or a decision on it is
// queued or running (409). It replaces [CodeAlreadyDecided], which is no
// longer answered.
const CodeDecided = "decided"

func apiError(status int, code, format string, args ...any) *Error {
	return &Error{status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// classify maps an error of the runtime or the store to its response.
func classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	status, code := http.StatusInternalServerError, CodeInternal
	switch {
	case errors.As(err, new(*unready)), errors.Is(err, session.ErrUnavailable):
		status, code = http.StatusServiceUnavailable, CodeUnavailable
	case errors.Is(err, session.ErrNotFound), errors.Is(err, session.ErrUnknownCall):
		status, code = http.StatusNotFound, CodeNotFound
	case errors.Is(err, session.ErrInvalidID), errors.Is(err, session.ErrSeqGap):
		status, code = http.StatusBadRequest, CodeBadRequest
	case errors.Is(err, session.ErrOpenTurn), errors.Is(err, vigil.ErrHasChildren):
		status, code = http.StatusConflict, CodeConflict
	case errors.Is(err, agentloop.ErrSuspended):
		status, code = http.StatusConflict, CodeSuspended
	case errors.Is(err, session.ErrAlreadyDecided), errors.Is(err, session.ErrDuplicateJob):
		status, code = http.StatusConflict, CodeDecided
	case errors.Is(err, session.ErrNotSuspended), errors.Is(err, session.ErrNotPending):
		status, code = http.StatusConflict, CodeNotPending
	case errors.Is(err, session.ErrInvalidDecision):
		status, code = http.StatusBadRequest, CodeInvalidDecision
	case errors.Is(err, vigil.ErrBusy):
		status, code = http.StatusConflict, CodeBusy
	case errors.Is(err, vigil.ErrNoQueue):
		status, code = http.StatusNotImplemented, CodeNoQueue
	}
	return &Error{status: status, Code: code, Message: err.Error()}
}

// writeJSON writes v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"code":"internal","message":"encoding the response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// writeError writes err's response.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.publicError(r, err)
	if e.Code == CodeUnauthorized {
		challenge := `Bearer realm="vigil"`
		if e.invalidToken {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	}
	if unreadBody(r) {
		refuseBody(w)
	}
	writeJSON(w, e.status, e)
}

// publicError is err's response as the client may see it. A 5xx made from
// a runtime's or a store's error says only what kind of failure it was and
// the request's id, under which the log line carries the whole error: a
// store's error may name its host, port, user or database (a PostgreSQL
// driver's does), which are none of the client's business.
func (s *Server) publicError(r *http.Request, err error) *Error {
	e := classify(err)
	if e.status < 500 {
		return e
	}
	id := requestID(r.Context())
	s.log.Error("request failed", "request", id, "method", r.Method, "path", r.URL.Path, "status", e.status, "error", err)
	if errors.As(err, new(*Error)) {
		return e // the server's own words
	}
	return &Error{status: e.status, Code: e.Code, Message: fmt.Sprintf("%s (request %s: the server's log has the details)", publicMessages[e.Code], id)}
}

// publicMessages say what a 5xx code means, without the details.
var publicMessages = map[string]string{
	CodeInternal:    "internal error",
	CodeUnavailable: "the session store does not answer now; try again",
	CodeNoQueue:     "the server's store keeps no turn queue",
}
