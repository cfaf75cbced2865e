package server

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// stored is a session's whole log as the proof endpoints read it: the
// JSONL bytes, their records, and the verdict of the invariants' rules
// (with the checkpoints checked against the server's keys, if any). One
// read of the log serves the steps, a step's request, the trace, the
// usage and a replay, so none of them derives anything a second way.
type stored struct {
	data []byte
	log  *session.Log
	rep  *invariants.Report
}

// readStored reads session info's log up to its current end and
// verifies it, holding one of the server's verification slots (see
// [Options].Verifies) while it does: the rules hold the log's records.
func (s *Server) readStored(r *http.Request, info session.Info) (*stored, error) {
	ctx := r.Context()
	tail, err := s.tail(ctx, info.ID)
	if err != nil {
		return nil, err
	}
	select {
	case s.verifies <- struct{}{}:
		defer func() { <-s.verifies }()
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	rd := s.logReader(ctx, tail.Info, tail.Next)
	data, err := io.ReadAll(rd)
	_ = rd.Close()
	if err != nil {
		return nil, err
	}
	log, err := session.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var audit *invariants.Audit
	if s.opts.CheckpointKeys != nil {
		audit = &invariants.Audit{Verifiers: s.opts.CheckpointKeys}
	}
	rep, err := invariants.VerifyAudited(bytes.NewReader(data), audit)
	if err != nil {
		return nil, err
	}
	return &stored{data: data, log: log, rep: rep}, nil
}
