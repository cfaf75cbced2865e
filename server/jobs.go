package server

import (
	"net/http"
	"time"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/session"
)

// Job is what GET /v1/jobs/{id} answers: a queued turn's or decision's
// state and, once it ended, its outcome.
type Job struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	// Kind is turn or decide.
	Kind string `json:"kind"`
	// Call is the tool call a decision decides (none for an abandon).
	Call string `json:"call,omitempty"`
	// State is queued, running, done, failed or cancelled.
	State    string     `json:"state"`
	Enqueued time.Time  `json:"enqueued"`
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
	Attempts int        `json:"attempts,omitempty"`
	Worker   string     `json:"worker,omitempty"`
	// By is who queued it, when its input says (a decision's decider).
	By string `json:"by,omitempty"`
	// Reason is how the job's turn ended (its turn/end reason, or
	// suspended).
	Reason string `json:"reason,omitempty"`
	// Error is why a failed or cancelled job ended so.
	Error *session.JobError `json:"error,omitempty"`
	// Checkpoint is the signed checkpoint the job's turn ended or
	// suspended with: its receipt, for vigil verify --anchor.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// handleJob answers a job's state and outcome. The queue keeps a
// finished job for session.FinishedJobTTL; an unknown job, one dropped
// since, or one of a session the caller may not see is 404.
func (s *Server) handleJob(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	q, err := s.rt.Queue()
	if err != nil {
		return 0, nil, err
	}
	id := r.PathValue("id")
	j, err := q.Job(r.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	if _, err := s.sessionFor(r.Context(), j.Session); err != nil {
		return 0, nil, apiError(http.StatusNotFound, CodeNotFound, "no job %s", id)
	}
	out := Job{ID: j.ID, Session: j.Session, Kind: j.Kind, Call: j.Call, State: string(j.State), Enqueued: j.Enqueued,
		Attempts: j.Attempts, Worker: j.Worker, By: vigil.JobBy(j), Reason: j.Outcome.Reason, Error: j.Outcome.Error, Checkpoint: j.Outcome.Checkpoint}
	if !j.Started.IsZero() {
		out.Started = &j.Started
	}
	if !j.Finished.IsZero() {
		out.Finished = &j.Finished
	}
	return http.StatusOK, out, nil
}
