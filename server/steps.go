package server

import (
	"net/http"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// StepInfo is one step of a session, as GET /v1/sessions/{id}/steps
// lists it.
type StepInfo struct {
	Turn int `json:"turn"`
	Step int `json:"step"`
	// Seq is the seq of the step's request/digest, or of its step/start
	// when the step sent no request (it was refused before).
	Seq int64 `json:"seq"`
	// Model is the model of the request header in force at the step.
	Model string `json:"model"`
	// Finish is the step's finish reason ("" while it is open).
	Finish string `json:"finish"`
	// DigestMatch: the step logged a request/digest and the request
	// re-derived from the log has that digest (what `vigil verify`
	// checks).
	DigestMatch bool `json:"digest_match"`
}

// StepList is what GET /v1/sessions/{id}/steps answers.
type StepList struct {
	Session string     `json:"session"`
	Steps   []StepInfo `json:"steps"`
}

// stepRef is where one step is in a log: the indexes of its step/start,
// request/digest and step/end (-1 for none).
type stepRef struct {
	StepInfo
	start, digest, end int
}

// stepsOf indexes the steps of a log, in log order. A step's digest
// matches when verify reported no request-digest violation at it: the
// rules re-derived every step's request already.
func stepsOf(st *stored) []stepRef {
	bad := map[int64]bool{}
	for _, v := range st.rep.Violations {
		if v.Rule == invariants.RuleRequestDigest {
			bad[v.Seq] = true
		}
	}
	var out []stepRef
	open := map[[2]int]int{} // (turn, step) → index in out
	model := ""
	for i, r := range st.log.Records {
		key := [2]int{r.Turn(), r.Step()}
		switch r.Type() {
		case session.TypeRequestHeader:
			if h, err := session.DecodeData[session.RequestHeader](r); err == nil {
				model = h.Header.Model
			}
		case session.TypeStepStart:
			open[key] = len(out)
			out = append(out, stepRef{StepInfo: StepInfo{Turn: r.Turn(), Step: r.Step(), Seq: r.Seq(), Model: model}, start: i, digest: -1, end: -1})
		case session.TypeRequestDigest:
			if k, ok := open[key]; ok && out[k].digest < 0 {
				out[k].digest, out[k].Seq, out[k].Model = i, r.Seq(), model
				out[k].DigestMatch = !bad[r.Seq()]
			}
		case session.TypeStepEnd:
			if k, ok := open[key]; ok {
				out[k].end = i
				if e, err := session.DecodeData[session.StepEnd](r); err == nil {
					out[k].Finish = e.Finish
				}
				delete(open, key)
			}
		}
	}
	return out
}

func (s *Server) handleSteps(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	info := admitted(r)
	st, err := s.readStored(r, info)
	if err != nil {
		return 0, nil, err
	}
	refs := stepsOf(st)
	out := StepList{Session: info.ID, Steps: make([]StepInfo, len(refs))}
	for i, ref := range refs {
		out.Steps[i] = ref.StepInfo
	}
	return http.StatusOK, out, nil
}
