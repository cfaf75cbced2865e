package playground

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// fork forks a session shown at seq at.
func (v *visitor) fork(id string, at int64) (*sessionView, error) {
	if err := v.lock(); err != nil {
		return nil, err
	}
	defer v.act.Unlock()
	s := v.srv
	base, ok := v.hub.records(id)
	if !ok {
		return nil, fmt.Errorf("%w: %q", errNotShown, id)
	}
	if at < -1 || at >= int64(len(base.records)) {
		return nil, fmt.Errorf("%w: seq %d: the log shows seqs 0..%d", errInvalid, at, len(base.records)-1)
	}
	child, err := s.mgr.Fork(s.base, id, at)
	if err != nil {
		return nil, err
	}
	s.track(v, child, kindFork, fmt.Sprintf("%s@%d", base.label, at), fmt.Sprintf("a fork of %s at seq %d", base.label, at))
	sv, _ := v.hub.snapshot(child.ID())
	return &sv, nil
}

// verifyResult is what `vigil verify` says of the stored log.
type verifyResult struct {
	Session    string                 `json:"session"`
	Events     int                    `json:"events"`
	Violations []invariants.Violation `json:"violations"`
}

// verify runs the offline rules (the append rules and request-digest)
// over the session's log as stored, encoded as the JSONL file a store
// would write.
func (v *visitor) verify(id string) (*verifyResult, error) {
	if err := v.lock(); err != nil {
		return nil, err
	}
	defer v.act.Unlock()
	s := v.srv
	if _, ok := v.hub.records(id); !ok {
		return nil, fmt.Errorf("%w: %q", errNotShown, id)
	}
	log, err := s.mgr.Store().Load(s.base, id)
	if err != nil {
		return nil, err
	}
	line := session.AppendHeaderLine(nil, log.Info)
	for _, r := range log.Records {
		line = r.AppendLine(line)
	}
	rep, err := invariants.Verify(bytes.NewReader(line))
	if err != nil {
		return nil, err
	}
	out := &verifyResult{Session: rep.Session, Events: rep.Events, Violations: rep.Violations}
	if out.Violations == nil {
		out.Violations = []invariants.Violation{}
	}
	return out, nil
}

// replayResult compares each step's request between a log and its replay.
type replayResult struct {
	Session string                  `json:"session"`
	Steps   []replay.StepComparison `json:"steps"`
	// Error is why the replay stopped, if it did.
	Error     string                `json:"error,omitempty"`
	Violation *invariants.Violation `json:"violation,omitempty"`
}

// replay runs every turn of the session's stored log again, as `vigil
// replay` does (see replay.Run): on a fresh runtime with the invariants
// plugin strict; then it compares every step's request digest.
func (v *visitor) replay(id string) (*replayResult, error) {
	if err := v.lock(); err != nil {
		return nil, err
	}
	defer v.act.Unlock()
	s := v.srv
	if _, ok := v.hub.records(id); !ok {
		return nil, fmt.Errorf("%w: %q", errNotShown, id)
	}
	ctx, cancel := context.WithTimeout(s.base, turnTimeout)
	defer cancel()
	orig, err := s.mgr.Store().Load(ctx, id)
	if err != nil {
		return nil, err
	}
	res := &replayResult{Session: id, Steps: []replay.StepComparison{}}
	if _, ok := session.DeriveHeader(orig.Records); !ok {
		res.Error = "the log has no request/header: nothing to replay"
		return res, nil
	}
	root := bus.New(bus.WithLogger(s.opts.Logger.Named("replay")))
	defer func() { _ = root.Dispose() }()
	c := root.Context()
	if _, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict}); err != nil {
		return nil, err
	}
	rr, err := replay.Run(ctx, c, live.NewManager(c, memory.New()), orig.Records)
	if err != nil {
		return nil, err
	}
	res.Steps = rr.Steps
	// A turn that failed in the recording fails again in the replay: that
	// is no divergence. Only a refusal is.
	for _, err := range rr.Errors {
		if v := violationOf(err); v != nil {
			res.Error, res.Violation = err.Error(), v
			break
		}
	}
	return res, nil
}

// errorsIsAny reports whether err is one of targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
