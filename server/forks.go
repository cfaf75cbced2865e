package server

import (
	"errors"
	"net/http"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/session"
)

// ForkInfo is what POST /v1/sessions/{id}/forks answers.
type ForkInfo struct {
	ID     string `json:"id"`
	Parent string `json:"parent"`
	At     int64  `json:"at"`
}

type forkRequest struct {
	At *int64 `json:"at"`
}

// handleFork forks the admitted session at a seq: the fork is in the
// session's tenant, made by the caller. A seq inside a turn, or past the
// log's end, is 400 with the sentence that names where a fork can start.
func (s *Server) handleFork(w http.ResponseWriter, r *http.Request) (int, any, error) {
	var req forkRequest
	if err := decodeBody(r, &req, false); err != nil {
		return 0, nil, err
	}
	if req.At == nil {
		return 0, nil, apiError(http.StatusBadRequest, CodeBadRequest, "at: the last seq to inherit is required (-1 for none)")
	}
	src := admitted(r).ID
	id, err := s.fork(r, src, *req.At)
	switch {
	case errors.Is(err, session.ErrOpenTurn):
		return 0, nil, apiError(http.StatusBadRequest, CodeBadRequest, "%s", err.Error())
	case errors.Is(err, session.ErrNotFound):
		// The session was admitted: what is not found is the seq.
		if _, serr := s.rt.SessionInfo(r.Context(), src); serr == nil {
			return 0, nil, apiError(http.StatusBadRequest, CodeBadRequest, "%s", err.Error())
		}
	}
	if err != nil {
		return 0, nil, err
	}
	w.Header().Set("Location", "/v1/sessions/"+id)
	return http.StatusCreated, ForkInfo{ID: id, Parent: src, At: *req.At}, nil
}

// fork is the one fork of the API (this route and POST /v1/sessions with
// a fork): [vigil.Runtime.Fork], by the caller.
func (s *Server) fork(r *http.Request, src string, at int64) (string, error) {
	return s.rt.Fork(r.Context(), src, at, vigil.By(PrincipalOf(r.Context()).Name))
}
