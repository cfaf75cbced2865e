package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// StepComparison pairs one step's request digest in a recorded log with
// the digest of the same step when the log is run again.
type StepComparison struct {
	Turn     int    `json:"turn"`
	Step     int    `json:"step"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Same     bool   `json:"same"`
}

// Rerun is the result of [Run].
type Rerun struct {
	// Session is the session the log was run again on.
	Session *live.Session
	// Steps compares every step's request, in order.
	Steps []StepComparison
	// Errors are the errors the turns ended with, in order. A turn that
	// failed in the recording fails again (the provider serves the
	// failure); a listener's refusal is an error too.
	Errors []error
}

// Identical reports whether every recorded request was sent again, the
// same, and no other.
func (r *Rerun) Identical() bool {
	for _, s := range r.Steps {
		if !s.Same {
			return false
		}
	}
	return len(r.Steps) > 0
}

// Run runs every turn of the recorded log again on a new session of mgr,
// with an agent on c: its header is the recording's (system, model,
// sampling, tools, output schema), the model answers from the recording, and each tool
// answers with its recorded results in order; events outside turns (a
// compaction's) are copied as they are. The requests must re-derive from
// the new log exactly as they did from the original: Steps compares their
// digests. Mount the invariants plugin on c to have every request checked
// against a fresh fold on the way.
//
// Approvals are replayed as recorded: a call the recording asked about
// is asked again (same asker, same reason), one the policy in force
// denied is denied again, the others run, and a suspended turn gets the
// recorded decisions again and resumes — so the new log has the same
// events at the same seqs. A turn the recording left waiting is left
// waiting (its error matches agentloop.ErrSuspended).
func Run(ctx context.Context, c *bus.Context, mgr *live.Manager, recorded []*session.Record) (*Rerun, error) {
	header, ok := session.DeriveHeader(recorded)
	if !ok {
		return nil, fmt.Errorf("replay: the log has no request/header: nothing to replay")
	}
	rec, err := FromRecords(recorded)
	if err != nil {
		return nil, err
	}
	cfg := agentloop.Config{System: header.System, Model: header.Model, Temperature: header.Temperature,
		MaxTokens: header.MaxTokens, Stop: header.Stop, MaxSteps: maxStep(recorded), OutputSchema: schemaConfig(header.OutputSchema)}
	agent := agentloop.New(c, cfg, agentloop.WithProvider(New(rec)), agentloop.WithTools(recordedTools(recorded, header)...), agentloop.WithName("replay"))
	defer func() { _ = agent.Close() }()
	sess, err := mgr.Create(ctx)
	if err != nil {
		return nil, err
	}
	ap := recordedApprovals(recorded)
	// Prepended: the recording's answer comes before any policy mounted on c.
	defer agentloop.ToolApprove.On(c, func(_ context.Context, q *agentloop.ApprovalQuery) (agentloop.Verdict, error) {
		if q.Session != sess {
			return agentloop.Verdict{}, nil
		}
		return ap.verdict(q.Call), nil
	}, bus.Prepend)()
	out := &Rerun{Session: sess}
	for i := 0; i < len(recorded); i++ {
		r := recorded[i]
		switch {
		case r.Type() == session.TypeTurnStart:
			prompt := ""
			if i+1 < len(recorded) && recorded[i+1].Type() == session.TypeUserMessage {
				if m, err := session.DecodeData[session.UserMessage](recorded[i+1]); err == nil {
					prompt = m.Content
				}
			}
			_, err := agent.Run(ctx, sess, prompt)
			for errors.Is(err, agentloop.ErrSuspended) && ap.decide(ctx, sess) {
				_, err = agent.Resume(ctx, sess)
			}
			if err != nil {
				out.Errors = append(out.Errors, err)
			}
			for i+1 < len(recorded) && recorded[i+1].Turn() == r.Turn() {
				i++
			}
		case r.Turn() == 0 && r.Type() != session.TypeEndSeed:
			ev := session.Event{Type: r.Type(), Sources: r.Sources(), Ignorable: r.Ignorable(), Data: json.RawMessage(r.Data())}
			if sf := r.Surface(); sf.Op == session.OpReplace {
				ev.Surface = &sf
			}
			if _, err := sess.Append(ctx, ev); err != nil {
				out.Errors = append(out.Errors, err)
			}
		}
	}
	out.Steps = compareDigests(recorded, sess.Records())
	return out, nil
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
func compareDigests(orig, again []*session.Record) []StepComparison {
	a, b := stepDigests(orig), stepDigests(again)
	out := []StepComparison{}
	for i := range max(len(a), len(b)) {
		var st StepComparison
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
	// Only the results of calls that started came from a tool: the loop
	// answers the others itself (a denied call, bad arguments), again.
	started := map[string]bool{}
	for _, r := range records {
		switch r.Type() {
		case session.TypeToolStart:
			if s, err := session.DecodeData[session.ToolStart](r); err == nil {
				started[s.ID] = true
			}
		case session.TypeToolResult:
			if res, err := session.DecodeData[session.ToolResult](r); err == nil && started[res.ID] {
				if t, ok := byName[res.Name]; ok {
					t.results = append(t.results, res)
				}
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

// approvals is what a recording says of its tool calls' approvals.
type approvals struct {
	requests  map[string]session.ApprovalRequest
	decisions map[string]session.ApprovalDecision // a person's, not the loop's
	policy    map[string]*session.PolicyMatcher   // in force at each call
}

func recordedApprovals(records []*session.Record) *approvals {
	a := &approvals{requests: map[string]session.ApprovalRequest{}, decisions: map[string]session.ApprovalDecision{}, policy: map[string]*session.PolicyMatcher{}}
	var pm *session.PolicyMatcher
	for _, r := range records {
		switch r.Type() {
		case session.TypeApprovalPolicy:
			if p, err := session.DecodeData[session.ApprovalPolicy](r); err == nil {
				pm, _ = session.CompilePolicy(p) // a loaded log's policies compile
			}
		case session.TypeToolCall:
			if c, err := session.DecodeData[session.ToolCall](r); err == nil {
				a.policy[c.ID] = pm
			}
		case session.TypeApprovalRequest:
			if q, err := session.DecodeData[session.ApprovalRequest](r); err == nil {
				a.requests[q.ID] = q
			}
		case session.TypeApprovalDecision:
			// The loop logs the decisions a session-scoped allow covers.
			if d, err := session.DecodeData[session.ApprovalDecision](r); err == nil && d.By != session.SessionRuleBy {
				a.decisions[d.ID] = d
			}
		}
	}
	return a
}

// verdict answers call as the recording did.
func (a *approvals) verdict(call session.ToolCall) agentloop.Verdict {
	if q, ok := a.requests[call.ID]; ok {
		return agentloop.Verdict{Action: session.ActionAsk, By: q.By, Reason: q.Reason}
	}
	if pm := a.policy[call.ID]; pm != nil {
		if action, reason := pm.Match(call.Name, call.Arguments); action == session.ActionDeny {
			return agentloop.Verdict{Action: action, By: pm.Policy().By, Reason: reason}
		}
	}
	return agentloop.Verdict{Action: session.ActionAllow}
}

// decide gives sess's undecided calls their recorded decisions. It
// reports whether every one had one: the step can resume.
func (a *approvals) decide(ctx context.Context, sess *live.Session) bool {
	s := session.Suspended(sess.Records())
	if s == nil {
		return false
	}
	for _, c := range s.Undecided() {
		d, ok := a.decisions[c.Call.ID]
		if !ok {
			return false
		}
		if _, err := agentloop.Decide(ctx, sess, c.Call.ID, agentloop.Decision{Allow: d.Allow, By: d.By, Reason: d.Reason, Scope: d.Scope}); err != nil {
			return false
		}
	}
	return true
}
