package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/session"
)

// The statuses of a session.
const (
	StatusIdle      = "idle"
	StatusRunning   = "running"
	StatusSuspended = "suspended"
)

// SessionInfo is a session's header as the API lists it.
type SessionInfo struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	// Tenant is the tenant the session belongs to; By who created it.
	Tenant string          `json:"tenant"`
	By     string          `json:"by,omitempty"`
	Parent *session.Parent `json:"parent,omitempty"`
}

// Summary is what GET /v1/sessions/{id} answers.
type Summary struct {
	SessionInfo
	// Status is idle, running (a job is queued or running, or a turn is
	// open) or suspended (waiting for approvals).
	Status string `json:"status"`
	// Events is the log's length: the seq the next event will have.
	Events int `json:"events"`
	// Turns is the number of the last turn (0: none yet).
	Turns int `json:"turns"`
	// Ended is how the last turn ended (its turn/end reason), empty while
	// it is open or before the first.
	Ended string `json:"ended,omitempty"`
	// LastActivity is the time of the log's last event (its creation for
	// an empty log).
	LastActivity time.Time `json:"last_activity"`
	Pending      []Pending `json:"pending,omitempty"`
	Jobs         []JobInfo `json:"jobs,omitempty"`
}

// Pending is a tool call waiting for a decision (or decided, while the
// step waits for its other calls).
type Pending struct {
	Call      string                    `json:"call"`
	Tool      string                    `json:"tool"`
	Arguments string                    `json:"arguments"`
	By        string                    `json:"by,omitempty"`
	Reason    string                    `json:"reason,omitempty"`
	Decision  *session.ApprovalDecision `json:"decision,omitempty"`
}

// JobInfo is a queued or running job.
type JobInfo struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	State    string    `json:"state"`
	Enqueued time.Time `json:"enqueued"`
	Attempts int       `json:"attempts,omitempty"`
	Worker   string    `json:"worker,omitempty"`
}

func infoOf(i session.Info) SessionInfo {
	return SessionInfo{ID: i.ID, Created: i.Created, Tenant: i.TenantOf(), By: i.By, Parent: i.Parent}
}

type createRequest struct {
	Fork *struct {
		Session string `json:"session"`
		At      *int64 `json:"at"`
	} `json:"fork,omitempty"`
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) (int, any, error) {
	var req createRequest
	if err := decodeBody(r, &req, true); err != nil {
		return 0, nil, err
	}
	p := PrincipalOf(r.Context())
	var id string
	var err error
	if f := req.Fork; f != nil {
		switch {
		case !session.ValidID(f.Session):
			err = apiError(http.StatusBadRequest, CodeBadRequest, "fork.session: %q is not a session id", f.Session)
		case f.At == nil:
			err = apiError(http.StatusBadRequest, CodeBadRequest, "fork.at: the last seq to inherit is required (-1 for none)")
		default:
			// The source must be the caller's to see; the fork is in its
			// tenant.
			if _, err = s.sessionFor(r.Context(), f.Session); err == nil {
				id, err = s.fork(r, f.Session, *f.At)
			}
		}
	} else {
		id, err = s.rt.NewSession(r.Context(), vigil.Tenant(ownerOf(p)), vigil.By(p.Name))
	}
	if err != nil {
		return 0, nil, err
	}
	sum, err := s.summary(r, id)
	if err != nil {
		return 0, nil, err
	}
	w.Header().Set("Location", "/v1/sessions/"+id)
	return http.StatusCreated, sum, nil
}

func (s *Server) handleList(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	status, err := statusFilter(r)
	if err != nil {
		return 0, nil, err
	}
	infos, err := s.rt.Sessions(r.Context())
	if err != nil && len(infos) == 0 {
		return 0, nil, err
	}
	infos = s.withStatus(r, infos, status)
	out := struct {
		Sessions []SessionInfo `json:"sessions"`
		// Unreadable names stored logs that could not be read.
		Unreadable []string `json:"unreadable,omitempty"`
	}{Sessions: make([]SessionInfo, 0, len(infos))}
	for _, i := range infos {
		if s.visible(r.Context(), i) {
			out.Sessions = append(out.Sessions, infoOf(i))
		}
	}
	if le, ok := err.(*session.ListError); ok {
		for _, e := range le.Entries {
			out.Unreadable = append(out.Unreadable, e.Error())
		}
	}
	return http.StatusOK, out, nil
}

func (s *Server) handleGet(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	id := admitted(r).ID
	sum, err := s.summary(r, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, sum, nil
}

// summary reads session id's queue and the tail of its log: never the
// whole log, whose length it does not bound.
func (s *Server) summary(r *http.Request, id string) (*Summary, error) {
	log, err := s.tail(r.Context(), id)
	if err != nil {
		return nil, err
	}
	q, err := s.rt.Queue()
	if err != nil {
		return nil, err
	}
	jobs, err := q.Jobs(r.Context(), id)
	if err != nil {
		return nil, err
	}
	sum := &Summary{SessionInfo: infoOf(log.Info), Status: StatusIdle, Events: int(log.Next), LastActivity: log.Info.Created}
	if n := len(log.Records); n > 0 {
		sum.LastActivity = log.Records[n-1].Time()
	}
	open := false
	for i := len(log.Records) - 1; i >= 0; i-- {
		rec := log.Records[i]
		if t := rec.Type(); t == session.TypeTurnStart || t == session.TypeTurnEnd {
			sum.Turns, open = rec.Turn(), t == session.TypeTurnStart
			if !open {
				sum.Ended = turnEndReason(rec)
			}
			break
		}
	}
	for _, j := range jobs {
		sum.Jobs = append(sum.Jobs, JobInfo{ID: j.ID, Kind: j.Kind, State: string(j.State), Enqueued: j.Enqueued, Attempts: j.Attempts, Worker: j.Worker})
	}
	if susp := session.Suspended(log.Records); susp != nil {
		for _, c := range susp.Calls {
			sum.Pending = append(sum.Pending, Pending{Call: c.Call.ID, Tool: c.Call.Name, Arguments: c.Call.Arguments,
				By: c.Request.By, Reason: c.Request.Reason, Decision: c.Decision})
		}
	}
	switch {
	case len(jobs) > 0 || open && sum.Pending == nil:
		sum.Status = StatusRunning
	case sum.Pending != nil:
		sum.Status = StatusSuspended
	}
	return sum, nil
}

// turnEndReason is the reason of a turn/end record ("" when it has none).
func turnEndReason(rec session.Record) string {
	var end struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(rec.Data(), &end) // a logged record decodes
	return end.Reason
}

// statusFilter returns the ?status= of a listing: "" (every session),
// idle, running or suspended; another value is 400.
func statusFilter(r *http.Request) (string, error) {
	switch st := r.URL.Query().Get("status"); st {
	case "", StatusIdle, StatusRunning, StatusSuspended:
		return st, nil
	default:
		return "", apiError(http.StatusBadRequest, CodeBadRequest, "status: %q is not idle, running or suspended", st)
	}
}

// withStatus keeps the sessions of infos the caller sees whose status is
// status (all of them for ""). Each kept session's status is its summary's,
// which reads its log and its jobs.
func (s *Server) withStatus(r *http.Request, infos []session.Info, status string) []session.Info {
	if status == "" {
		return infos
	}
	var out []session.Info
	for _, i := range infos {
		if !s.visible(r.Context(), i) {
			continue
		}
		if sum, err := s.summary(r, i.ID); err == nil && sum.Status == status {
			out = append(out, i)
		}
	}
	return out
}

// tail reads the tail of session id's log (see [session.LoadTail]).
func (s *Server) tail(ctx context.Context, id string) (*session.Tail, error) {
	mgr, err := s.rt.Manager()
	if err != nil {
		return nil, err
	}
	return session.LoadTail(ctx, mgr.Store(), id)
}
