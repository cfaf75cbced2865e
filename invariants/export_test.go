package invariants

import (
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// CompareRequest, for the tests, runs the request rules of [CheckRequest]
// against an already folded expectation: messages position by position,
// then the header, then orphaned tool results.
func CompareRequest(want []session.Message, header session.Header, req *agentloop.Request) *Violation {
	if v := requestReconstruction(want, req.Messages); v != nil {
		return v
	}
	if v := requestHeader(header, true, req.Header); v != nil {
		return v
	}
	return orphanedToolResult(req.Messages.Clone())
}

// Replay, for the benchmarks, runs the append rules over a whole log as
// the plugin does when it meets a session: validate, then apply, per
// record.
func Replay(records []session.Record) *Violation {
	_, v := replay(records)
	return v
}

// NewReplayer, for the benchmarks, returns the reader a loaded log is
// checked by, record by record (see onLoading), and its violation.
func NewReplayer() (add func(session.Record), violation func() *Violation) {
	p := newReplayer()
	return p.add, func() *Violation { return p.v }
}
