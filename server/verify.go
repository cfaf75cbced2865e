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

func (s *Server) handleVerify(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	id := admitted(r).ID
	log, err := s.rt.Session(r.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	data := session.AppendHeaderLine(nil, log.Info)
	for _, rec := range log.Records {
		data = rec.AppendLine(data)
	}
	rep, err := invariants.Verify(bytes.NewReader(data))
	if err != nil {
		return 0, nil, err
	}
	out := VerifyReport{Session: id, Events: rep.Events, OK: len(rep.Violations) == 0, Violations: rep.Violations}
	if out.Violations == nil {
		out.Violations = []invariants.Violation{}
	}
	return http.StatusOK, out, nil
}
