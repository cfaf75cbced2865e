package server

import (
	"context"
	"net/http"

	"github.com/vigil-run/vigil"
)

// Deleted is the answer to a delete: the sessions deleted, children
// before their parents.
type Deleted struct {
	Deleted []string `json:"deleted"`
}

// handleDelete deletes the session (with ?tree=true its child sessions
// too) from the store: a turn running on it is stopped first. The route
// needs the user role, in the session's tenant (an admin in any): who
// may create a session and post to it may delete it, and [Server.admit]
// answers 404 for another tenant's session. The principal is logged as
// who asked.
func (s *Server) handleDelete(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	id := admitted(r).ID
	tree, err := queryBool(r, "tree", false)
	if err != nil {
		return 0, nil, err
	}
	p := PrincipalOf(r.Context())
	// A client that hangs up does not leave a deletion half done (the
	// queue cancelled, the log kept).
	ctx := context.WithoutCancel(r.Context())
	deleted, err := s.rt.DeleteSession(ctx, id, vigil.DeleteOptions{Tree: tree, By: p.Name})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, Deleted{Deleted: deleted}, nil
}
