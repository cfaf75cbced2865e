package server

import (
	"net/http"
	"strconv"

	"github.com/vigil-run/vigil/session"
)

// StepRequest is what GET /v1/sessions/{id}/steps/{turn}/{step}/request
// answers: the request the model received at that step, re-derived from
// the log as `vigil verify` derives it (the fold of the records before
// the step's step/start, under the request header in force at its
// request/digest), with what proves it.
type StepRequest struct {
	Session string `json:"session"`
	Turn    int    `json:"turn"`
	Step    int    `json:"step"`
	// Seq is the seq of the step's request/digest (of its step/start
	// when it has none).
	Seq      int64             `json:"seq"`
	Header   session.Header    `json:"header"`
	Messages []session.Message `json:"messages"`
	Digest   DigestCheck       `json:"digest"`
	// Invariants is the verdict of the invariants' rules on the log up
	// to the step's end.
	Invariants Verdict        `json:"invariants"`
	Checkpoint CheckpointInfo `json:"checkpoint"`
}

// DigestCheck compares the digest a step logged with the digest of the
// request re-derived from the log.
type DigestCheck struct {
	// Recorded is the logged request/digest ("" when the step logged
	// none); Derived the digest of the re-derived request.
	Recorded string `json:"recorded"`
	Derived  string `json:"derived"`
	// Match: both digests, and the message counts, are equal.
	Match bool `json:"match"`
}

// Verdict is what the invariants' rules found.
type Verdict struct {
	OK       bool     `json:"ok"`
	Findings []string `json:"findings"`
}

func (s *Server) handleStepRequest(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	info := admitted(r)
	turn, step, err := parseStep(r.PathValue("turn"), r.PathValue("step"))
	if err != nil {
		return 0, nil, err
	}
	st, err := s.readStored(r, info)
	if err != nil {
		return 0, nil, err
	}
	var ref *stepRef
	for _, x := range stepsOf(st) {
		if x.Turn == turn && x.Step == step {
			ref = &x
			break
		}
	}
	if ref == nil {
		return 0, nil, apiError(http.StatusNotFound, CodeNotFound, "session %s has no step %d of turn %d", info.ID, step, turn)
	}
	out, err := deriveStep(info.ID, st, ref)
	if err != nil {
		return 0, nil, err
	}
	out.Checkpoint = s.coverage(st, out.Seq)
	return http.StatusOK, out, nil
}

// deriveStep re-derives the request of step ref: the records before its
// request/digest (every record of its step so far when it has none) are
// what the request could be built from.
func deriveStep(id string, st *stored, ref *stepRef) (*StepRequest, error) {
	recs := st.log.Records
	upto := len(recs)
	if ref.end >= 0 {
		upto = ref.end
	}
	if ref.digest >= 0 {
		upto = ref.digest
	}
	msgs, h, _, err := session.DeriveRequest(recs[:upto], ref.start)
	if err != nil {
		return nil, err
	}
	out := &StepRequest{Session: id, Turn: ref.Turn, Step: ref.Step, Seq: ref.Seq, Header: h, Messages: msgs}
	if out.Messages == nil {
		out.Messages = []session.Message{}
	}
	out.Digest.Derived = session.RequestDigest(h, msgs)
	if ref.digest >= 0 {
		if d, err := session.DecodeData[session.Digest](recs[ref.digest]); err == nil {
			out.Digest.Recorded = d.SHA256
			out.Digest.Match = d.SHA256 == out.Digest.Derived && d.Messages == len(msgs)
		}
	}
	last := int64(len(recs)) - 1
	if ref.end >= 0 {
		last = recs[ref.end].Seq()
	}
	out.Invariants = Verdict{OK: true, Findings: []string{}}
	for _, v := range st.rep.Violations {
		if v.Seq <= last {
			out.Invariants.OK = false
			out.Invariants.Findings = append(out.Invariants.Findings, v.String())
		}
	}
	return out, nil
}

// parseStep reads the {turn} and {step} of a path: decimal numbers from
// 1, as the log numbers them; anything else is 400.
func parseStep(turn, step string) (int, int, error) {
	t, err1 := strconv.ParseUint(turn, 10, 31)
	n, err2 := strconv.ParseUint(step, 10, 31)
	if err1 != nil || err2 != nil || t == 0 || n == 0 {
		return 0, 0, apiError(http.StatusBadRequest, CodeBadRequest, "turn %q and step %q: want numbers from 1", turn, step)
	}
	return int(t), int(n), nil
}
