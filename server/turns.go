package server

import (
	"encoding/json"
	"errors"
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
func (s *Server) handleTurn(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	id := admitted(r).ID
	var req turnRequest
	if err := decodeBody(r, &req, false); err != nil {
		return 0, nil, err
	}
	queue, err := queryBool(r, "queue", true)
	if err != nil {
		return 0, nil, err
	}
	if req.Prompt == nil || *req.Prompt == "" {
		return 0, nil, apiError(http.StatusBadRequest, CodeBadRequest, "prompt: a turn needs a prompt")
	}
	sum, err := s.summary(r, id)
	if err != nil {
		return 0, nil, err
	}
	switch {
	case len(sum.Jobs) == 0 && sum.Pending != nil:
		return 0, nil, apiError(http.StatusConflict, CodeSuspended, "session %s waits for approvals: decide them (POST /v1/sessions/%s/approvals/CALL) before a new turn", id, id)
	case !queue && len(sum.Jobs) > 0:
		return 0, nil, apiError(http.StatusConflict, CodeBusy, "session %s has %d job(s) queued or running (queue=false)", id, len(sum.Jobs))
	}
	return s.queued(r, id)(s.rt.QueueTurn(r.Context(), id, *req.Prompt, vigil.By(PrincipalOf(r.Context()).Name)))
}

// queued answers a job just queued on session id.
func (s *Server) queued(r *http.Request, id string) func(session.Job, int, error) (int, any, error) {
	return func(job session.Job, pos int, err error) (int, any, error) {
		if err != nil {
			return 0, nil, err
		}
		s.opts.Metrics.queued(r.Context(), job.Kind)
		return http.StatusAccepted, Queued{Job: job.ID, Session: id, Position: pos}, nil
	}
}

type decideRequest struct {
	Allow  *bool  `json:"allow"`
	Reason string `json:"reason"`
	// By is refused: who decided is the authenticated principal, never
	// what the body says. It is decoded only to say so.
	By json.RawMessage `json:"by"`
	// Scope "session" allows this call and the later ones it covers.
	Scope string `json:"scope"`
}

// handleDecide queues a decision on a pending call: 202 with its job.
// A call that is not pending is refused now (404 unknown, 409 not
// pending), and so is a second decision, decided or queued (409 decided:
// the queue refuses it, so two reviewers racing get one 202), and a
// decision no one may give, such as an unknown scope (400
// invalid_decision, by the check the worker makes).
func (s *Server) handleDecide(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	id := admitted(r).ID
	var req decideRequest
	if err := decodeBody(r, &req, false); err != nil {
		return 0, nil, err
	}
	if req.Allow == nil {
		return 0, nil, apiError(http.StatusBadRequest, CodeBadRequest, "allow: true or false is required")
	}
	if req.By != nil {
		return 0, nil, apiError(http.StatusBadRequest, CodeBadRequest, "by: a decision is logged as made by the caller's credentials, not by what the body says; leave it out")
	}
	call := r.PathValue("call")
	job, pos, err := s.rt.QueueDecision(r.Context(), id, call,
		vigil.Decision{Allow: *req.Allow, By: PrincipalOf(r.Context()).Name, Reason: req.Reason, Scope: req.Scope})
	if errors.Is(err, session.ErrDuplicateJob) {
		// Say it in the API's words: the store's are its own business.
		err = apiError(http.StatusConflict, CodeDecided, "call %s has a decision already, queued or taken: GET /v1/sessions/%s shows it", call, id)
	}
	return s.queued(r, id)(job, pos, err)
}

// Cancelled is the answer to a cancel: how many jobs were dropped or
// signalled and, for a suspended turn, the calls denied (reason
// cancelled) by the job that ends it aborted.
type Cancelled struct {
	Session   string   `json:"session"`
	Cancelled int      `json:"cancelled"`
	Denied    []string `json:"denied,omitempty"`
	// Job is the job that abandons the suspended turn.
	Job string `json:"job,omitempty"`
}

// handleCancel drops the session's queued jobs and cancels its running
// one (its turn ends aborted). A turn suspended on approvals is abandoned:
// a queued job denies its undecided calls with reason cancelled and ends
// it aborted, by the path every decision takes.
func (s *Server) handleCancel(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	id := admitted(r).ID
	c, err := s.rt.CancelSession(r.Context(), id, PrincipalOf(r.Context()).Name)
	if err != nil {
		return 0, nil, err
	}
	out := Cancelled{Session: id, Cancelled: c.Cancelled}
	if c.Abandon.ID != "" {
		s.opts.Metrics.queued(r.Context(), c.Abandon.Kind)
		out.Job, out.Denied = c.Abandon.ID, c.Denied
	}
	return http.StatusOK, out, nil
}
