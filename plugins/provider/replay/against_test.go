package replay_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
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
