package replay_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/compaction"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// TestAgainstNamesTheFirstFieldThatDiffers: a recording re-run by an
// agent whose config differs in one model-visible field reports that
// field at turn 1 step 1; one that differs in nothing reports nothing;
// a conversation that differs reports the message.
func TestAgainstNamesTheFirstFieldThatDiffers(t *testing.T) {
	ctx := context.Background()
	dir := folder(t)
	base := agentloop.Config{System: "be helpful", Model: "m1"}
	w := newWorld(t, memory.New(), dir)
	prov, err := scripted.New(scripted.Config{})
	require.NoError(t, err)
	orig := w.run(t, prov)
	temp := 0.3
	for _, tc := range []struct {
		name  string
		cfg   func(agentloop.Config) agentloop.Config
		extra []agentloop.Tool
		field string
		step  int
	}{
		{"same", func(c agentloop.Config) agentloop.Config { return c }, nil, "", 0},
		{"system", func(c agentloop.Config) agentloop.Config { c.System = "be terse"; return c }, nil, "header.system", 1},
		{"model", func(c agentloop.Config) agentloop.Config { c.Model = "m2"; return c }, nil, "header.model", 1},
		{"temperature", func(c agentloop.Config) agentloop.Config { c.Temperature = &temp; return c }, nil, "header.temperature", 1},
		{"max_tokens", func(c agentloop.Config) agentloop.Config { c.MaxTokens = 9; return c }, nil, "header.max_tokens", 1},
		{"a tool added", func(c agentloop.Config) agentloop.Config { return c }, []agentloop.Tool{calc.Tool{}}, "header.tools", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			again := newWorld(t, memory.New(), dir)
			p, err := scripted.New(scripted.Config{})
			require.NoError(t, err)
			a := agentloop.New(again.c, tc.cfg(base), agentloop.WithProvider(p), agentloop.WithTools(append(again.tools, tc.extra...)...))
			defer a.Close()
			res, err := replay.Against(ctx, again.c, again.mgr, a, orig.Records(), replay.AgainstOptions{})
			require.NoError(t, err)
			if tc.field == "" {
				assert.Nil(t, res.Divergence)
				assert.Equal(t, res.Steps, res.Identical)
				assert.Positive(t, res.Identical)
				return
			}
			require.NotNil(t, res.Divergence)
			assert.Equal(t, tc.field, res.Divergence.Field)
			assert.Equal(t, 1, res.Divergence.Turn)
			assert.Equal(t, tc.step, res.Divergence.Step)
			assert.NotEqual(t, res.Divergence.Expected, res.Divergence.Actual)
			assert.Contains(t, res.Divergence.Diff(), "- ")
			assert.Contains(t, res.Divergence.Diff(), "+ ")
		})
	}
}

// TestAgainstTheSameCompositionFollowsACrashedTurn: a recording whose
// second turn's process died (closed by crash repair) and whose third
// turn continued it, re-run by an agent configured as the recording's:
// the crashed turn stops where the recording does and is closed as
// repair closed it, so every later request matches too.
func TestAgainstTheSameCompositionFollowsACrashedTurn(t *testing.T) {
	ctx := context.Background()
	dir := folder(t)
	cfg := agentloop.Config{System: "be helpful", Model: "m1"}
	script := scripted.Config{Repeat: true, Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "list_dir", Arguments: map[string]any{"path": "."}}}}, {Text: "done"},
	}}
	w := newWorld(t, memory.New(), dir)
	prov, err := scripted.New(script)
	require.NoError(t, err)
	a := agentloop.New(w.c, cfg, agentloop.WithProvider(prov), agentloop.WithTools(w.tools...))
	sess, err := w.mgr.Create(ctx)
	require.NoError(t, err)
	_, err = a.Run(ctx, sess, "look")
	require.NoError(t, err)
	// The process dies once the tool started.
	dies := int64(sess.Len() + 9)
	undo := bus.Veto.On(w.c, func(_ context.Context, d bus.Dispatch) error {
		if cm, ok := d.Payload.(live.Commit); ok && cm.Session() == sess && cm.Record().Seq() >= dies {
			return errors.New("the process died")
		}
		return nil
	})
	_, err = a.Run(ctx, sess, "look again")
	require.Error(t, err)
	undo()
	for _, ev := range session.Closers(sess.Records()) {
		_, err := sess.Append(ctx, ev)
		require.NoError(t, err)
	}
	require.Equal(t, session.TypeTurnEnd, sess.Records()[sess.Len()-1].Type())
	b := agentloop.New(w.c, cfg, agentloop.WithProvider(prov), agentloop.WithTools(w.tools...))
	_, err = b.Continue(ctx, sess)
	require.NoError(t, err)

	again := newWorld(t, memory.New(), dir)
	p, err := scripted.New(script)
	require.NoError(t, err)
	c := agentloop.New(again.c, cfg, agentloop.WithProvider(p), agentloop.WithTools(again.tools...))
	defer c.Close()
	res, err := replay.Against(ctx, again.c, again.mgr, c, sess.Records(), replay.AgainstOptions{})
	require.NoError(t, err)
	assert.Nil(t, res.Divergence, "%+v", res.Divergence)
	assert.Equal(t, res.Steps, res.Identical)
	assert.GreaterOrEqual(t, res.Steps, 4)
}

// TestAgainstTheSameCompositionFollowsAnAbortedTurn: a recording whose
// first turn the user interrupted while a tool ran, re-run by an agent
// configured as the recording's: the turn is cancelled where the
// recording shows it was, so the next turn's requests match too.
func TestAgainstTheSameCompositionFollowsAnAbortedTurn(t *testing.T) {
	ctx := context.Background()
	cfg := agentloop.Config{System: "be helpful", Model: "m1"}
	script := scripted.Config{Repeat: true, Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "alpha", Arguments: map[string]any{"x": 14}}, {Name: "alpha", Arguments: map[string]any{"x": 10}}}},
		{Text: "done"},
	}}
	w := newWorld(t, memory.New(), t.TempDir())
	prov, err := scripted.New(script)
	require.NoError(t, err)
	turnCtx, cancel := context.WithCancel(ctx)
	a := agentloop.New(w.c, cfg, agentloop.WithProvider(prov), agentloop.WithTools(echoTool{name: "alpha", cancel: cancel}))
	sess, err := w.mgr.Create(ctx)
	require.NoError(t, err)
	res, err := a.Run(turnCtx, sess, "look")
	require.Error(t, err)
	require.Equal(t, session.ReasonAborted, res.Reason)
	_, err = a.Run(ctx, sess, "go on")
	require.NoError(t, err)

	again := newWorld(t, memory.New(), t.TempDir())
	p, err := scripted.New(script)
	require.NoError(t, err)
	b := agentloop.New(again.c, cfg, agentloop.WithProvider(p), agentloop.WithTools(echoTool{name: "alpha"}))
	defer b.Close()
	got, err := replay.Against(ctx, again.c, again.mgr, b, sess.Records(), replay.AgainstOptions{})
	require.NoError(t, err)
	assert.Nil(t, got.Divergence, "%+v", got.Divergence)
	assert.Equal(t, got.Steps, got.Identical)
	assert.Equal(t, 2, got.Steps)
	assert.Empty(t, got.Errors)
}

// TestAgainstACompositionThatSendsNoRequestDiverges: a candidate that
// refuses every turn before its first request (a limit on agent/step, as
// a budget with no price for its model does) compares nothing, and that
// is a divergence at the first recorded step, with the refusal; one whose
// step limit ends the turn early diverges at the first step it did not
// send.
func TestAgainstACompositionThatSendsNoRequestDiverges(t *testing.T) {
	ctx := context.Background()
	dir := folder(t)
	w := newWorld(t, memory.New(), dir)
	prov, err := scripted.New(scripted.Config{})
	require.NoError(t, err)
	orig := w.run(t, prov)

	again := newWorld(t, memory.New(), dir)
	agentloop.StepBegin.On(again.c, func(context.Context, *agentloop.StepCheck) error {
		return &agentloop.BudgetError{Limit: "price", Message: `budget: model "m1" has no price`}
	})
	p, err := scripted.New(scripted.Config{})
	require.NoError(t, err)
	a := agentloop.New(again.c, agentloop.Config{System: "be helpful", Model: "m1"}, agentloop.WithProvider(p), agentloop.WithTools(again.tools...))
	defer a.Close()
	res, err := replay.Against(ctx, again.c, again.mgr, a, orig.Records(), replay.AgainstOptions{})
	require.NoError(t, err)
	assert.Zero(t, res.Steps)
	require.NotNil(t, res.Divergence, "a rerun that sent nothing is no pass")
	assert.Equal(t, replay.Divergence{Turn: 1, Step: 1, Field: "request", NotSent: `budget: model "m1" has no price`,
		Expected: "the recorded request (sha256 " + digests(t, orig.Records())[0] + ")", Actual: `(no request: budget: model "m1" has no price)`}, *res.Divergence)
	assert.Equal(t, `replay: turn 1 step 1: no request was sent: budget: model "m1" has no price`, res.Divergence.Error())

	short := newWorld(t, memory.New(), dir)
	p, err = scripted.New(scripted.Config{})
	require.NoError(t, err)
	b := agentloop.New(short.c, agentloop.Config{System: "be helpful", Model: "m1", MaxSteps: 1}, agentloop.WithProvider(p), agentloop.WithTools(short.tools...))
	defer b.Close()
	res, err = replay.Against(ctx, short.c, short.mgr, b, orig.Records(), replay.AgainstOptions{})
	require.NoError(t, err)
	require.NotNil(t, res.Divergence)
	assert.Equal(t, 1, res.Identical)
	assert.Equal(t, 2, res.Divergence.Step)
	assert.Equal(t, "the turn ended max-steps", res.Divergence.NotSent)
}

// countOneShots counts the one-shot requests its provider is handed.
type countOneShots struct {
	*scripted.Provider
	n int
}

func (c *countOneShots) Stream(ctx context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	if !req.LoopBuilt() {
		c.n++
	}
	return c.Provider.Stream(ctx, req)
}

// TestAgainstComparesOneShots: a recording with compactions, re-run by
// the same composition, matches one-shot for one-shot (each is answered
// from the recording: no provider is asked); re-run with another
// compaction prompt, the first compaction's request is the divergence,
// named field by field as a step's is, since both one-shots re-derive
// from their logs.
func TestAgainstComparesOneShots(t *testing.T) {
	ctx := context.Background()
	dir := folder(t)
	withCompaction := func(t *testing.T, prompt string) *world {
		w := newWorld(t, memory.New(), dir)
		m, ok := bus.LookupModule(compaction.Name)
		require.True(t, ok)
		_, err := w.c.Plugin(m.New(), &compaction.Config{MaxMessages: 3, Keep: 1, Prompt: prompt})
		require.NoError(t, err)
		return w
	}
	w := withCompaction(t, "")
	prov, err := scripted.New(scripted.Config{})
	require.NoError(t, err)
	orig := w.run(t, prov)
	require.NotEmpty(t, ofType(orig.Records(), session.TypeRequestOneshot), "the recording compacted")

	for _, tc := range []struct {
		name, prompt, field string
	}{
		{"same", "", ""},
		{"another prompt", "Summarize it in a haiku.", "messages["},
	} {
		t.Run(tc.name, func(t *testing.T) {
			again := withCompaction(t, tc.prompt)
			p, err := scripted.New(scripted.Config{})
			require.NoError(t, err)
			counted := &countOneShots{Provider: p}
			a := agentloop.New(again.c, agentloop.Config{System: "be helpful", Model: "m1"}, agentloop.WithProvider(counted), agentloop.WithTools(again.tools...))
			defer a.Close()
			res, err := replay.Against(ctx, again.c, again.mgr, a, orig.Records(), replay.AgainstOptions{})
			require.NoError(t, err)
			assert.Zero(t, counted.n, "one-shots are answered from the recording or refused, never sent")
			if tc.field == "" {
				assert.Nil(t, res.Divergence, "%+v", res.Divergence)
				assert.Equal(t, res.Steps, res.Identical)
				assert.Equal(t, len(ofType(orig.Records(), session.TypeRequestOneshot)), len(ofType(res.Session.Records(), session.TypeCompactionStart)))
				return
			}
			require.NotNil(t, res.Divergence)
			d := res.Divergence
			assert.Equal(t, compaction.Purpose, d.OneShot)
			assert.Zero(t, d.Step)
			assert.Contains(t, d.Field, tc.field)
			assert.Contains(t, d.Expected, compaction.DefaultPrompt)
			assert.Contains(t, d.Actual, tc.prompt)
			assert.Contains(t, d.Error(), "the compaction one-shot before turn")
		})
	}
}

func ofType(recs []session.Record, typ string) []session.Record {
	var out []session.Record
	for _, r := range recs {
		if r.Type() == typ {
			out = append(out, r)
		}
	}
	return out
}

// TestAgainstTheSameCompositionFollowsRecordedApprovals: a recording
// whose calls were asked about (one denied, one allowed for the session,
// a later one covered by it), re-run by an agent under the same policy:
// each suspended turn is given the recorded decisions and resumed, so
// every request matches and the rerun holds the same decisions.
func TestAgainstTheSameCompositionFollowsRecordedApprovals(t *testing.T) {
	ctx := context.Background()
	dir := folder(t)
	rules := &approvals.Config{Rules: []approvals.Rule{{Tool: "*", Action: "ask", Reason: "tools need a yes"}}}
	script := scripted.Config{Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "list_dir", Arguments: map[string]any{"path": "."}}}},
		{ToolCalls: []scripted.ToolCall{{Name: "list_dir", Arguments: map[string]any{"path": "src"}}}},
		{ToolCalls: []scripted.ToolCall{{Name: "list_dir", Arguments: map[string]any{"path": "."}}}},
		{Text: "done"},
	}}
	cfg := agentloop.Config{System: "be helpful", Model: "m1"}
	w := newWorld(t, memory.New(), dir)
	_, err := w.c.Plugin(approvals.Plugin, rules)
	require.NoError(t, err)
	prov, err := scripted.New(script)
	require.NoError(t, err)
	a := agentloop.New(w.c, cfg, agentloop.WithProvider(prov), agentloop.WithTools(w.tools...))
	orig, err := w.mgr.Create(ctx)
	require.NoError(t, err)
	res, err := a.Run(ctx, orig, "look")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	_, err = agentloop.Decide(ctx, orig, res.Pending[0].Call.ID, agentloop.Decision{By: "ann", Reason: "not now"})
	require.NoError(t, err)
	res, err = a.Resume(ctx, orig)
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	_, err = agentloop.Decide(ctx, orig, res.Pending[0].Call.ID, agentloop.Decision{Allow: true, By: "ann", Scope: session.ScopeSession})
	require.NoError(t, err)
	_, err = a.Resume(ctx, orig)
	require.NoError(t, err)

	again := newWorld(t, memory.New(), dir)
	_, err = again.c.Plugin(approvals.Plugin, rules)
	require.NoError(t, err)
	p, err := scripted.New(script)
	require.NoError(t, err)
	b := agentloop.New(again.c, cfg, agentloop.WithProvider(p), agentloop.WithTools(again.tools...))
	defer b.Close()
	got, err := replay.Against(ctx, again.c, again.mgr, b, orig.Records(), replay.AgainstOptions{})
	require.NoError(t, err)
	assert.Nil(t, got.Divergence, "%+v", got.Divergence)
	assert.Empty(t, got.Errors)
	assert.Equal(t, 4, got.Steps)
	assert.Equal(t, got.Steps, got.Identical)
	decisions := func(recs []session.Record) (out []string) {
		for _, r := range recs {
			if d, err := session.DecodeData[session.ApprovalDecision](r); err == nil && r.Type() == session.TypeApprovalDecision {
				out = append(out, fmt.Sprintf("%t %s %s", d.Allow, d.By, d.Scope))
			}
		}
		return out
	}
	assert.Len(t, decisions(orig.Records()), 3, "two by ann, one by the rule her second made")
	assert.Equal(t, decisions(orig.Records()), decisions(got.Session.Records()))
}
