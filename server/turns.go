package server

import (
	"net/http"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/session"
)

// Queued is the answer to a posted turn or decision: the job that will
// run it and how many jobs of the session run before it.
type Queued struct {
	Job      string `json:"job"`
	Session  string `json:"session"`
	Position int    `json:"position"`
}

type turnRequest struct {
	Prompt *string `json:"prompt"`
}

// handleTurn queues a turn: 202 with its job. A session suspended on
// approvals (with nothing queued that could decide them) refuses it with
// 409 suspended; with ?queue=false a session with a job queued or
// running refuses it with 409 busy.
func (s *Server) handleTurn(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req turnRequest
	if err := decodeBody(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Prompt == nil || *req.Prompt == "" {
		s.writeError(w, r, apiError(http.StatusBadRequest, CodeBadRequest, "prompt: a turn needs a prompt"))
		return
	}
	noQueue := r.URL.Query().Get("queue") == "false"
	log, err := s.rt.Session(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, err := s.rt.Queue()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jobs, err := q.Jobs(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case len(jobs) == 0 && session.Suspended(log.Records) != nil:
		s.writeError(w, r, apiError(http.StatusConflict, CodeSuspended, "session %s waits for approvals: decide them (POST /v1/sessions/%s/approvals/CALL) before a new turn", id, id))
		return
	case noQueue && len(jobs) > 0:
		s.writeError(w, r, apiError(http.StatusConflict, CodeBusy, "session %s has %d job(s) queued or running (queue=false)", id, len(jobs)))
		return
	}
	job, pos, err := s.rt.QueueTurn(r.Context(), id, *req.Prompt)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.opts.Metrics.queued(r.Context(), job.Kind)
	writeJSON(w, http.StatusAccepted, Queued{Job: job.ID, Session: id, Position: pos})
}

type decideRequest struct {
	Allow  *bool  `json:"allow"`
	Reason string `json:"reason"`
	By     string `json:"by"`
	// Scope "session" allows this call and the later ones it covers.
	Scope string `json:"scope"`
}

// handleDecide queues a decision on a pending call: 202 with its job.
// A call that is not pending is refused now (404 unknown, 409 not
// pending or already decided).
func (s *Server) handleDecide(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req decideRequest
	if err := decodeBody(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Allow == nil {
		s.writeError(w, r, apiError(http.StatusBadRequest, CodeBadRequest, "allow: true or false is required"))
		return
	}
	by := req.By
	if by == "" {
		by = "api"
	}
	job, pos, err := s.rt.QueueDecision(r.Context(), id, r.PathValue("call"),
		vigil.Decision{Allow: *req.Allow, By: by, Reason: req.Reason, Scope: req.Scope})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.opts.Metrics.queued(r.Context(), job.Kind)
	writeJSON(w, http.StatusAccepted, Queued{Job: job.ID, Session: id, Position: pos})
}

// handleCancel drops the session's queued jobs and cancels its running
// one (its turn ends aborted).
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, err := s.rt.Queue()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	n, err := q.Cancel(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Session   string `json:"session"`
		Cancelled int    `json:"cancelled"`
	}{id, n})
}
