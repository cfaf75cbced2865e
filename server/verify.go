package server

import (
	"bytes"
	"net/http"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// VerifyReport is what GET /v1/sessions/{id}/verify answers: the
// invariants' rules run over the stored log, offline.
type VerifyReport struct {
	Session    string                 `json:"session"`
	Events     int                    `json:"events"`
	OK         bool                   `json:"ok"`
	Violations []invariants.Violation `json:"violations"`
}

func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	log, err := s.rt.Session(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	data := session.AppendHeaderLine(nil, log.Info)
	for _, rec := range log.Records {
		data = rec.AppendLine(data)
	}
	rep, err := invariants.Verify(bytes.NewReader(data))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := VerifyReport{Session: id, Events: rep.Events, OK: len(rep.Violations) == 0, Violations: rep.Violations}
	if out.Violations == nil {
		out.Violations = []invariants.Violation{}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
	}{"ok"})
}
