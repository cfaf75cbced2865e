package server

import (
	"bufio"
	"context"
	"io"
	"net/http"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// DefaultVerifies bounds the verifications that run at once, unless
// [Options].Verifies says otherwise: the rules hold a log's records while
// they check it, so concurrent verifies of a large log must not multiply.
const DefaultVerifies = 2

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
	tail, err := s.tail(r.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	select {
	case s.verifies <- struct{}{}:
		defer func() { <-s.verifies }()
	case <-r.Context().Done():
		return 0, nil, context.Cause(r.Context())
	}
	log := s.logReader(r.Context(), tail.Info, tail.Next)
	rep, err := invariants.Verify(log)
	_ = log.Close() // ends the writer, when the rules stopped early
	if err != nil {
		return 0, nil, err
	}
	out := VerifyReport{Session: id, Events: rep.Events, OK: len(rep.Violations) == 0, Violations: rep.Violations}
	if out.Violations == nil {
		out.Violations = []invariants.Violation{}
	}
	return http.StatusOK, out, nil
}

// logReader streams the log of info, up to seq end (excluded), as the
// JSONL file it is: the rules decode it once, and no copy of it is held.
func (s *Server) logReader(ctx context.Context, info session.Info, end int64) io.ReadCloser {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		defer cancel()
		bw := bufio.NewWriterSize(pw, 64<<10)
		_, err := bw.Write(session.AppendHeaderLine(nil, info))
		if err == nil {
			err = s.writeRecords(ctx, bw, info.ID, 0, end)
		}
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	return pr
}
