package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/session"
)

// The 409 codes of a reconcile the session's log refuses.
const (
	// CodeOutcomeKnown: the call's result is not TOOL_OUTCOME_UNKNOWN.
	CodeOutcomeKnown = "outcome_known"
	// CodeReconciled: the call was reconciled already (the message names
	// who).
	CodeReconciled = "reconciled"
	// CodeOpenTurn: a turn of the session is open (suspended on
	// approvals, or running): a call is reconciled between turns.
	CodeOpenTurn = "open_turn"
)

type reconcileRequest struct {
	Result *string `json:"result"`
	Failed *string `json:"failed"`
	// By is refused: who reconciled is the authenticated principal.
	By json.RawMessage `json:"by"`
}

// Reconciled is the answer to a reconcile: the outcome as logged.
type Reconciled struct {
	Session string                `json:"session"`
	Call    string                `json:"call"`
	Seq     int64                 `json:"seq"`
	Outcome session.ToolReconcile `json:"outcome"`
}

// handleReconcile logs the real outcome of a call whose outcome is
// unknown, as the caller found it: 200 with the record's data. It waits
// for the session's lease (a turn running elsewhere, or a second
// reconcile) as long as the request may last, so of two reconcilers
// racing one is answered 200 and the other 409 reconciled.
func (s *Server) handleReconcile(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	id, call := admitted(r).ID, r.PathValue("call")
	var req reconcileRequest
	if err := decodeBody(r, &req, false); err != nil {
		return 0, nil, err
	}
	switch {
	case req.By != nil:
		return 0, nil, apiError(http.StatusBadRequest, CodeBadRequest, "by: a reconcile is logged as made by the caller's credentials, not by what the body says; leave it out")
	case (req.Result == nil) == (req.Failed == nil):
		return 0, nil, apiError(http.StatusBadRequest, CodeBadRequest, "exactly one of result (what the call returned) and failed (why it failed) is required")
	case req.Failed != nil && *req.Failed == "":
		return 0, nil, apiError(http.StatusBadRequest, CodeBadRequest, "failed: say why the call failed")
	}
	out := vigil.Reconciliation{By: PrincipalOf(r.Context()).Name, Wait: true}
	if req.Failed != nil {
		out.Failed = *req.Failed
	} else {
		out.Result = *req.Result
	}
	if err := s.rt.Reconcile(r.Context(), id, call, out); err != nil {
		return 0, nil, reconcileError(err, id, call)
	}
	// The reconcile follows the last turn: the log's tail holds it,
	// unless a turn began since.
	tail, err := s.tail(r.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	rec, seq, ok := session.Reconciled(tail.Records, call)
	if !ok {
		log, err := s.rt.Session(r.Context(), id)
		if err != nil {
			return 0, nil, err
		}
		rec, seq, ok = session.Reconciled(log.Records, call)
	}
	if !ok {
		return 0, nil, errors.New("server: a logged reconcile is not in the log")
	}
	return http.StatusOK, Reconciled{Session: id, Call: call, Seq: seq, Outcome: rec}, nil
}

// reconcileError says a refused reconcile in the API's words.
func reconcileError(err error, id, call string) error {
	switch {
	case errors.Is(err, session.ErrOutcomeKnown):
		return apiError(http.StatusConflict, CodeOutcomeKnown, "call %s has a known outcome: only a TOOL_OUTCOME_UNKNOWN result is reconciled", call)
	case errors.Is(err, session.ErrAlreadyReconciled):
		var re *session.ReconciledError
		if errors.As(err, &re) && re.By != "" {
			return apiError(http.StatusConflict, CodeReconciled, "call %s was reconciled already, by %s (seq %d)", call, re.By, re.Seq)
		}
		return apiError(http.StatusConflict, CodeReconciled, "call %s was reconciled already: GET /v1/sessions/%s/events shows it", call, id)
	case errors.Is(err, session.ErrOpenTurn):
		return apiError(http.StatusConflict, CodeOpenTurn, "session %s has an open turn: reconcile %s once it ends", id, call)
	case errors.Is(err, session.ErrUnknownCall):
		return apiError(http.StatusNotFound, CodeNotFound, "session %s has no tool call %s", id, call)
	}
	return err
}
