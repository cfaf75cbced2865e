package server

import (
	"net/http"
	"time"

	"github.com/vigil-run/vigil/session"
)

// Approval is a tool call that waits for a person's decision, as the
// inbox (GET /v1/approvals) lists it.
type Approval struct {
	Session string `json:"session"`
	Call    string `json:"call"`
	Tool    string `json:"tool"`
	// Arguments are the call's arguments, whole (never cut).
	Arguments string `json:"arguments"`
	// By asked (a plugin), Reason says why.
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Requested is when the approval/request was logged.
	Requested time.Time `json:"requested"`
	// Parent is, for a sub-agent's child session, the parent session and
	// the call of it the child serves.
	Parent *ApprovalParent `json:"parent,omitempty"`
}

// ApprovalParent names the call of a parent session that a sub-agent's
// child session serves.
type ApprovalParent struct {
	ID   string `json:"id"`
	Call string `json:"call"`
}

// handleApprovals is a person's inbox: the calls of every session the
// caller sees that wait for a decision, oldest request first within a
// session. It reads the tail of each session's log (its last turn), so
// its cost grows with the sessions, not with their logs.
func (s *Server) handleApprovals(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	infos, err := s.rt.Sessions(r.Context())
	if err != nil && len(infos) == 0 {
		return 0, nil, err
	}
	out := struct {
		Approvals []Approval `json:"approvals"`
	}{Approvals: []Approval{}}
	for _, info := range infos {
		if !s.visible(r.Context(), info) {
			continue
		}
		tail, err := s.tail(r.Context(), info.ID)
		if err != nil {
			continue // removed or unreadable since it was listed
		}
		susp := session.Suspended(tail.Records)
		if susp == nil {
			continue
		}
		for _, c := range susp.Undecided() {
			a := Approval{Session: info.ID, Call: c.Call.ID, Tool: c.Call.Name, Arguments: c.Call.Arguments,
				By: c.Request.By, Reason: c.Request.Reason}
			if req, ok := tail.At(c.RequestSeq); ok {
				a.Requested = req.Time()
			}
			if p := info.Parent; p != nil && p.Call != "" {
				a.Parent = &ApprovalParent{ID: p.ID, Call: p.Call}
			}
			out.Approvals = append(out.Approvals, a)
		}
	}
	return http.StatusOK, out, nil
}
