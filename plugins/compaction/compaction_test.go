package compaction_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/compaction"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

type env struct {
	c     *bus.Context
	mgr   *live.Manager
	tools []agentloop.Tool
	reqs  []*agentloop.Request
}

func newEnv(t *testing.T, cfg *compaction.Config) *env {
	t.Helper()
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	c := root.Context()
	_, err := c.Plugin(invariants.New(), nil)
	require.NoError(t, err)
	e := &env{c: c, mgr: live.NewManager(c, memory.New())}
	agentloop.LLMStream.On(c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
		e.reqs = append(e.reqs, req)
		return next(ctx, req)
	})
	if cfg != nil {
		m, ok := bus.LookupModule(compaction.Name)
		require.True(t, ok)
		_, err = c.Plugin(m.New(), cfg)
		require.NoError(t, err)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("n"), 0o644))
	f, err := fstools.Open(dir, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	e.tools = f.Tools()
	return e
}

func (e *env) agent(t *testing.T, p agentloop.Provider) *agentloop.Agent {
	if p == nil {
		var err error
		p, err = scripted.New(scripted.Config{})
		require.NoError(t, err)
	}
	return agentloop.New(e.c, agentloop.Config{System: "sys", Model: "m"}, agentloop.WithProvider(p), agentloop.WithTools(e.tools...))
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

func TestCompactionReplacesOlderHistoryBetweenTurns(t *testing.T) {
	e := newEnv(t, &compaction.Config{MaxMessages: 6, Keep: 2})
	a := e.agent(t, nil)
	sess, err := e.mgr.Create(context.Background())
	require.NoError(t, err)
	for _, p := range []string{"first", "second"} {
		_, err := a.Run(context.Background(), sess, p)
		require.NoError(t, err)
	}
	require.Len(t, sess.Messages(), 8)
	assert.Empty(t, ofType(sess.Records(), session.TypeCompactionStart), "6 < 8 only after turn 2")

	before := sess.Len()
	_, err = a.Run(context.Background(), sess, "third")
	require.NoError(t, err)
	recs := sess.Records()

	// Right after turn 2: the summary's one-shot and its usage, start,
	// the summary, end; then turn 3.
	var types []string
	for _, r := range recs[before : before+6] {
		types = append(types, r.Type())
	}
	assert.Equal(t, []string{"request/oneshot", "request/usage", "compaction/start", "user/message", "compaction/end", "turn/start"}, types)
	start, _ := session.DecodeData[session.Compaction](recs[before+2])
	end, _ := session.DecodeData[session.Compaction](recs[before+4])
	assert.Equal(t, start.ID, end.ID)
	oneshot, err := session.DecodeData[session.Oneshot](recs[before])
	require.NoError(t, err)
	assert.Equal(t, compaction.Purpose, oneshot.Purpose)
	assert.Equal(t, compaction.DefaultPrompt, oneshot.Instruction)
	assert.Equal(t, []int64{int64(before)}, recs[before+1].Sources(), "the usage cites its one-shot")

	summary := recs[before+3]
	assert.Equal(t, summary.Sources(), recs[before].Sources(), "the one-shot cites the events it summarizes")
	sf := summary.Surface()
	assert.Equal(t, session.OpReplace, sf.Op)
	// The range ends at the tool-call message: balanced, it takes in the
	// call's result too, so only the last answer is kept verbatim.
	surfaceBefore, err := session.DeriveMessages(recs[:before])
	require.NoError(t, err)
	require.Len(t, surfaceBefore, 8)
	var shadowed []int64
	for _, r := range recs[:before] {
		if r.IsSurface() && r.Seq() >= sf.Start && r.Seq() <= sf.End {
			shadowed = append(shadowed, r.Seq())
		}
	}
	assert.Equal(t, shadowed, summary.Sources())
	m, _ := session.DecodeData[session.UserMessage](summary)
	assert.True(t, strings.HasPrefix(m.Content, compaction.SummaryPrefix+"In short: [user] first "), m.Content)

	// The summary's request: the shadowed messages as the model saw them,
	// then the prompt, under the turn's header (tools and all); the log
	// re-derives it.
	var loop []*agentloop.Request
	var oneShots []*agentloop.Request
	for _, r := range e.reqs {
		if r.LoopBuilt() {
			loop = append(loop, r)
		} else {
			oneShots = append(oneShots, r)
		}
	}
	require.Len(t, oneShots, 1)
	shot := oneShots[0]
	assert.Equal(t, append(surfaceBefore[:7:7], session.Message{Role: session.RoleUser, Content: compaction.DefaultPrompt}), shot.Messages.Clone())
	assert.Equal(t, shot.Messages.Len(), oneshot.Messages)
	assert.True(t, session.HeaderEquals(loop[3].Header, shot.Header), "the turn's header")
	assert.NotEmpty(t, shot.Header.Tools)
	h, msgs, ok, err := session.OneshotRequest(recs, recs[before])
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, oneshot.SHA256, session.RequestDigest(h, msgs))
	assert.Equal(t, oneshot.SHA256, shot.Digest())
	requireVerifies(t, sess)

	// Turn 3's first request: the summary, the kept answer, the prompt.
	req := loop[4]
	require.Equal(t, 3, req.Messages.Len())
	assert.Equal(t, m.Content, req.Messages.At(0).Content)
	assert.Equal(t, surfaceBefore[7], req.Messages.At(1))
	assert.Equal(t, "third", req.Messages.At(2).Content)

	// The originals stay in the log.
	all, err := session.DeriveMessages(recs[:before])
	require.NoError(t, err)
	assert.Equal(t, "first", all[0].Content)
}

// requireVerifies verifies sess's log as vigil verify does: its one-shots
// are re-derived.
func requireVerifies(t *testing.T, sess *live.Session) {
	t.Helper()
	data := session.AppendHeaderLine(nil, session.Info{ID: sess.ID(), Created: time.Now()})
	for _, r := range sess.Records() {
		data = r.AppendLine(data)
	}
	rep, err := invariants.Verify(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
	assert.Empty(t, rep.OneshotsUnderived)
}

func TestCompactionNeverSplitsAToolCallFromItsResult(t *testing.T) {
	for keep := 1; keep <= 5; keep++ {
		e := newEnv(t, &compaction.Config{MaxMessages: 6, Keep: keep})
		a := e.agent(t, nil)
		sess, err := e.mgr.Create(context.Background())
		require.NoError(t, err)
		for _, p := range []string{"a", "b", "c"} {
			_, err := a.Run(context.Background(), sess, p)
			require.NoError(t, err, "keep %d", keep)
		}
		// Every tool message in the fold answers an earlier call.
		calls := map[string]bool{}
		for _, m := range sess.Messages() {
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
			if m.Role == session.RoleTool {
				assert.True(t, calls[m.ToolCallID], "keep %d: orphaned result %s", keep, m.ToolCallID)
			}
		}
		assert.NotEmpty(t, ofType(sess.Records(), session.TypeCompactionEnd), "keep %d", keep)
	}
}

func TestCompactionByBytes(t *testing.T) {
	e := newEnv(t, &compaction.Config{MaxBytes: 40, Keep: 1})
	a := e.agent(t, nil)
	sess, err := e.mgr.Create(context.Background())
	require.NoError(t, err)
	_, err = a.Run(context.Background(), sess, "short")
	require.NoError(t, err)
	assert.Empty(t, ofType(sess.Records(), session.TypeCompactionStart))
	_, err = a.Run(context.Background(), sess, strings.Repeat("long prompt ", 10))
	require.NoError(t, err)
	assert.Len(t, ofType(sess.Records(), session.TypeCompactionStart), 1)
}

// failOneShots answers loop-built requests like the default script and
// fails every one-shot request.
type failOneShots struct{ *scripted.Provider }

func (f failOneShots) Stream(ctx context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	if !req.LoopBuilt() {
		return nil, &agentloop.ProviderError{Provider: "test", Status: 500, Err: errors.New("summaries are down")}
	}
	return f.Provider.Stream(ctx, req)
}

func TestFailedSummaryLeavesTheTurnUncompacted(t *testing.T) {
	e := newEnv(t, &compaction.Config{MaxMessages: 2, Keep: 1})
	p, err := scripted.New(scripted.Config{})
	require.NoError(t, err)
	a := e.agent(t, failOneShots{p})
	sess, err := e.mgr.Create(context.Background())
	require.NoError(t, err)
	for _, prompt := range []string{"a", "b"} {
		res, err := a.Run(context.Background(), sess, prompt)
		require.NoError(t, err)
		assert.Equal(t, session.ReasonCompleted, res.Reason)
	}
	assert.Empty(t, ofType(sess.Records(), session.TypeCompactionStart))
	assert.Len(t, sess.Messages(), 8)
}

func TestCompactorDirectly(t *testing.T) {
	e := newEnv(t, nil)
	a := e.agent(t, nil)
	sess, err := e.mgr.Create(context.Background())
	require.NoError(t, err)
	_, err = a.Run(context.Background(), sess, "x")
	require.NoError(t, err)

	k, err := compaction.New(e.c, compaction.Config{MaxBytes: 1, Keep: 3})
	require.NoError(t, err)
	p, _ := scripted.New(scripted.Config{})
	// keep 3 of 4 messages leaves one to summarize: not worth it.
	res, err := k.Compact(context.Background(), sess, p, session.Header{})
	require.NoError(t, err)
	assert.Nil(t, res)

	k, err = compaction.New(e.c, compaction.Config{MaxMessages: 2, Keep: 1})
	require.NoError(t, err)
	res, err = k.Compact(context.Background(), sess, p, session.Header{})
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.Len(t, res.Shadowed, 3)
	assert.Len(t, sess.Messages(), 2)
	// Compacting again: the summary and one message; nothing to do.
	res, err = k.Compact(context.Background(), sess, p, session.Header{})
	require.NoError(t, err)
	assert.Nil(t, res)
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		cfg compaction.Config
		ok  bool
	}{
		{compaction.Config{}, true},
		{compaction.Config{MaxMessages: 10, Keep: 4}, true},
		{compaction.Config{MaxBytes: 1000, Keep: 4}, true},
		{compaction.Config{MaxMessages: 4, Keep: 4}, false},
		{compaction.Config{MaxMessages: -1}, false},
		{compaction.Config{Keep: -1}, false},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		assert.Equal(t, tc.ok, err == nil, "%+v: %v", tc.cfg, err)
	}
}
