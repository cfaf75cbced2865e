package playground

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/replay"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/memory"
)

// fork forks a session shown at seq at.
func (s *Server) fork(id string, at int64) (*sessionView, error) {
	s.act.Lock()
	defer s.act.Unlock()
	base, ok := s.hub.records(id)
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
	s.hub.describe(child.ID(), kindFork, fmt.Sprintf("%s@%d", base.label, at), fmt.Sprintf("a fork of %s at seq %d", base.label, at))
	v, _ := s.hub.snapshot(child.ID())
	return &v, nil
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
func (s *Server) verify(id string) (*verifyResult, error) {
	s.act.Lock()
	defer s.act.Unlock()
	if _, ok := s.hub.records(id); !ok {
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
	Session string         `json:"session"`
	Steps   []replayedStep `json:"steps"`
	// Error is why the replay stopped, if it did.
	Error     string                `json:"error,omitempty"`
	Violation *invariants.Violation `json:"violation,omitempty"`
}

type replayedStep struct {
	Turn     int    `json:"turn"`
	Step     int    `json:"step"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Same     bool   `json:"same"`
}

// replay runs every turn of the session's stored log again, as `vigil
// replay` does: on a fresh runtime with the invariants plugin strict, the
// model answering from the recording (provider/replay), tools answering
// with their recorded results, and events outside turns (compactions)
// copied; then it compares every step's request digest.
func (s *Server) replay(id string) (*replayResult, error) {
	s.act.Lock()
	defer s.act.Unlock()
	if _, ok := s.hub.records(id); !ok {
		return nil, fmt.Errorf("%w: %q", errNotShown, id)
	}
	ctx, cancel := context.WithTimeout(s.base, turnTimeout)
	defer cancel()
	orig, err := s.mgr.Store().Load(ctx, id)
	if err != nil {
		return nil, err
	}
	res := &replayResult{Session: id, Steps: []replayedStep{}}
	header, ok := session.DeriveHeader(orig.Records)
	if !ok {
		res.Error = "the log has no request/header: nothing to replay"
		return res, nil
	}
	rec, err := replay.FromRecords(orig.Records)
	if err != nil {
		return nil, err
	}
	root := bus.New(bus.WithLogger(s.opts.Logger.Named("replay")))
	defer func() { _ = root.Dispose() }()
	c := root.Context()
	if _, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict}); err != nil {
		return nil, err
	}
	mgr := session.NewManager(c, memory.New())
	cfg := agentloop.Config{System: header.System, Model: header.Model, Temperature: header.Temperature,
		MaxTokens: header.MaxTokens, Stop: header.Stop, MaxSteps: maxStep(orig.Records)}
	agent := agentloop.New(c, cfg, agentloop.WithProvider(replay.New(rec)), agentloop.WithTools(recordedTools(orig.Records, header)...), agentloop.WithName("replay"))
	defer func() { _ = agent.Close() }()
	sess, err := mgr.Create(ctx)
	if err != nil {
		return nil, err
	}
	var runErr error
	recs := orig.Records
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		switch {
		case r.Type() == session.TypeTurnStart:
			prompt := ""
			if i+1 < len(recs) && recs[i+1].Type() == session.TypeUserMessage {
				if m, err := session.DecodeData[session.UserMessage](recs[i+1]); err == nil {
					prompt = m.Content
				}
			}
			// A turn that failed in the recording fails again in the
			// replay (the provider serves its failure): that is no
			// divergence. Only a refusal is.
			if _, err := agent.Run(ctx, sess, prompt); violationOf(err) != nil && runErr == nil {
				runErr = err
			}
			for i+1 < len(recs) && recs[i+1].Turn() == r.Turn() {
				i++
			}
		case r.Turn() == 0 && r.Type() != session.TypeEndSeed:
			ev := session.Event{Type: r.Type(), Sources: r.Sources(), Ignorable: r.Ignorable(), Data: json.RawMessage(r.Data())}
			if sf := r.Surface(); sf.Op == session.OpReplace {
				ev.Surface = &sf
			}
			if _, err := sess.Append(ctx, ev); err != nil && runErr == nil {
				runErr = err
			}
		}
	}
	res.Steps = compareDigests(orig.Records, sess.Records())
	if runErr != nil {
		res.Error, res.Violation = runErr.Error(), violationOf(runErr)
	}
	return res, nil
}

func maxStep(records []*session.Record) int {
	n := 1
	for _, r := range records {
		n = max(n, r.Step())
	}
	return n
}

type stepDigest struct {
	turn, step int
	sha        string
}

func stepDigests(records []*session.Record) []stepDigest {
	var out []stepDigest
	for _, r := range records {
		if r.Type() == session.TypeRequestDigest {
			d, _ := session.DecodeData[session.Digest](r)
			out = append(out, stepDigest{r.Turn(), r.Step(), d.SHA256})
		}
	}
	return out
}

// compareDigests pairs the steps of two logs in order.
func compareDigests(orig, again []*session.Record) []replayedStep {
	a, b := stepDigests(orig), stepDigests(again)
	out := []replayedStep{}
	for i := range max(len(a), len(b)) {
		var st replayedStep
		if i < len(a) {
			st.Turn, st.Step, st.Recorded = a[i].turn, a[i].step, a[i].sha
		}
		if i < len(b) {
			if i >= len(a) {
				st.Turn, st.Step = b[i].turn, b[i].step
			}
			st.Replayed = b[i].sha
		}
		st.Same = st.Recorded != "" && st.Recorded == st.Replayed
		out = append(out, st)
	}
	return out
}

// recordedTool answers calls with the results the log recorded for the
// same tool, in order: the replayed model makes the same calls.
type recordedTool struct {
	spec    session.ToolSpec
	mu      sync.Mutex
	results []session.ToolResult
}

func recordedTools(records []*session.Record, h session.Header) []agentloop.Tool {
	byName := map[string]*recordedTool{}
	out := []agentloop.Tool{}
	for _, spec := range h.Tools {
		t := &recordedTool{spec: spec}
		byName[spec.Name] = t
		out = append(out, t)
	}
	for _, r := range records {
		if r.Type() != session.TypeToolResult {
			continue
		}
		if res, err := session.DecodeData[session.ToolResult](r); err == nil {
			if t, ok := byName[res.Name]; ok {
				t.results = append(t.results, res)
			}
		}
	}
	return out
}

func (t *recordedTool) Spec() session.ToolSpec { return t.spec }

func (t *recordedTool) Execute(context.Context, json.RawMessage) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.results) == 0 {
		return "", &agentloop.ToolError{Code: "REPLAY_NO_RESULT", Message: "the recording has no more results of this tool"}
	}
	res := t.results[0]
	t.results = t.results[1:]
	if res.Error != nil {
		return res.Content, &agentloop.ToolError{Code: res.Error.Code, Message: res.Error.Message}
	}
	return res.Content, nil
}

var _ agentloop.Tool = (*recordedTool)(nil)

// errorsIsAny reports whether err is one of targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
