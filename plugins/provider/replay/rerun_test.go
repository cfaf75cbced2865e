package replay_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	storemem "github.com/vigil-run/vigil/plugins/store/memory"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// TestRunReproducesEveryRequestWithRecordedToolResults: the tools of the
// rerun answer from the recording, so the requests re-derive identically
// even when the folder the tools read has changed since.
func TestRunReproducesEveryRequestWithRecordedToolResults(t *testing.T) {
	dir := folder(t)
	orig := record(t, dir)
	require.NoError(t, os.Mkdir(dir+"/added-later", 0o755))

	w := newWorld(t, memory.New(), t.TempDir())
	rr, err := replay.Run(context.Background(), w.c, w.mgr, orig.Records())
	require.NoError(t, err)
	assert.Empty(t, rr.Errors)
	assert.True(t, rr.Identical(), "%+v", rr.Steps)
	assert.Len(t, rr.Steps, 6)
	assert.Equal(t, surface(t, orig.Records()), surface(t, rr.Session.Records()))
}

// TestRunReproducesALogWrittenBeforeTextWasValidUTF8: the logs the old
// code wrote from bytes that are not UTF-8 (their invalid bytes spelled
// \ufffd, their digests computed so) rerun identically: the rerun's
// records hold U+FFFD, and its requests are the recorded ones with their
// text made valid.
func TestRunReproducesALogWrittenBeforeTextWasValidUTF8(t *testing.T) {
	rerunFixtures(t, "../../../session/testdata/legacy-utf8/*.jsonl", func(t *testing.T, _ []session.Record, rr *replay.Rerun) {
		assert.Len(t, rr.Steps, 2)
		for _, st := range rr.Steps {
			assert.NotEqual(t, st.Recorded, st.Replayed, "the recorded digests cover the old spelling")
		}
	})
}

// TestRunFollowsARecordingsDenialOrder: logs written before the loop
// logged a step's denials first (session/testdata/denials-in-call-order)
// rerun identically: the rerun logs each denial where the recording has
// it, among the step's other calls.
func TestRunFollowsARecordingsDenialOrder(t *testing.T) {
	rerunFixtures(t, "../../../session/testdata/denials-in-call-order/*.jsonl", func(t *testing.T, recorded []session.Record, rr *replay.Rerun) {
		assert.Equal(t, surface(t, recorded), surface(t, rr.Session.Records()))
	})
}

// rerunFixtures reruns each of the two logs pattern names and requires
// the rerun identical, then checks it further with check.
func rerunFixtures(t *testing.T, pattern string, check func(t *testing.T, recorded []session.Record, rr *replay.Rerun)) {
	files, err := filepath.Glob(pattern)
	require.NoError(t, err)
	require.Len(t, files, 2)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			log, err := session.DecodeBytes(data)
			require.NoError(t, err)
			w := newWorld(t, memory.New(), t.TempDir())
			rr, err := replay.Run(context.Background(), w.c, w.mgr, log.Records)
			require.NoError(t, err)
			assert.Empty(t, rr.Errors)
			assert.True(t, rr.Identical(), "%+v", rr.Steps)
			check(t, log.Records, rr)
		})
	}
}

// TestRunReportsARequestThatNoLongerReDerives: a user message edited in
// the log changes the request its step sends.
func TestRunReportsARequestThatNoLongerReDerives(t *testing.T) {
	orig := record(t, folder(t))
	var edited []session.Record
	for _, r := range orig.Records() {
		if r.Type() == session.TypeUserMessage && len(edited) < 3 {
			ev := session.Event{Type: r.Type(), Turn: r.Turn(), Data: json.RawMessage(`{"content":"something else"}`)}
			var err error
			r, err = session.NewRecord(r.Seq(), r.Time(), ev)
			require.NoError(t, err)
		}
		edited = append(edited, r)
	}
	w := newWorld(t, memory.New(), t.TempDir())
	rr, err := replay.Run(context.Background(), w.c, w.mgr, edited)
	require.NoError(t, err)
	assert.False(t, rr.Identical())
	assert.False(t, rr.Steps[0].Same)
	assert.NotEqual(t, rr.Steps[0].Recorded, rr.Steps[0].Replayed)
}

// TestRunReplaysALogWithoutRequests: a log whose turns all ended before
// a request (verify passes it) has nothing to compare, and no divergence.
func TestRunReplaysALogWithoutRequests(t *testing.T) {
	orig := newWorld(t, memory.New(), t.TempDir())
	sess, err := orig.mgr.Create(context.Background())
	require.NoError(t, err)
	for _, ev := range []session.Event{{Type: session.TypeTurnStart, Turn: 1, Data: session.TurnStart{}}, {Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonInterrupted}}} {
		_, err := sess.Append(context.Background(), ev)
		require.NoError(t, err)
	}
	w := newWorld(t, memory.New(), t.TempDir())
	rr, err := replay.Run(context.Background(), w.c, w.mgr, sess.Records())
	require.NoError(t, err)
	assert.Empty(t, rr.Steps)
	assert.Empty(t, rr.Errors)
	assert.True(t, rr.Identical())
	assert.Len(t, rr.Session.Records(), 2)
}

// TestRunReplaysApprovalsAsRecorded: a recording whose calls were asked
// about — one denied, one allowed for the rest of the session, a later
// one covered by it — and one the policy denied, replays with the same
// events at the same seqs, each request re-derived identically.
func TestRunReplaysApprovalsAsRecorded(t *testing.T) {
	ctx := context.Background()
	dir := folder(t)
	w := newWorld(t, memory.New(), dir)
	_, err := w.c.Plugin(approvals.Plugin, &approvals.Config{Rules: []approvals.Rule{
		{Tool: "*", Arguments: "nope", Action: "deny", Reason: "not that"},
		{Tool: "*", Action: "ask", Reason: "tools need a yes"},
	}})
	require.NoError(t, err)
	prov, err := scripted.New(scripted.Config{Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "list_dir", Arguments: map[string]any{"path": "."}}, {Name: "list_dir", Arguments: map[string]any{"path": "nope"}}}},
		{ToolCalls: []scripted.ToolCall{{Name: "list_dir", Arguments: map[string]any{"path": "src"}}}},
		{ToolCalls: []scripted.ToolCall{{Name: "list_dir", Arguments: map[string]any{"path": "."}}}},
		{Text: "done"},
	}})
	require.NoError(t, err)
	a := agentloop.New(w.c, agentloop.Config{System: "be helpful", Model: "m1"}, agentloop.WithProvider(prov), agentloop.WithTools(w.tools...))
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
	res, err = a.Resume(ctx, orig)
	require.NoError(t, err, "the third call is covered by the session-scoped allow")
	require.Equal(t, session.ReasonCompleted, res.Reason)

	again := newWorld(t, memory.New(), dir)
	rr, err := replay.Run(ctx, again.c, again.mgr, orig.Records())
	require.NoError(t, err)
	assert.Empty(t, rr.Errors)
	assert.True(t, rr.Identical(), "%+v", rr.Steps)
	typesOf := func(recs []session.Record) []string {
		var out []string
		for _, r := range recs {
			out = append(out, r.Type())
		}
		return out
	}
	assert.Equal(t, typesOf(orig.Records()), typesOf(rr.Session.Records()))
	assert.Contains(t, typesOf(orig.Records()), session.TypeApprovalDecision)
}

// TestRunReplaysAHotReloadedToolChange: between turns the composition is
// reloaded — tools/fs replaced by tools/calc, then the agent plugin with
// another system prompt — so the log's headers change (change, then
// resume); the replay offers each step what was in force then.
func TestRunReplaysAHotReloadedToolChange(t *testing.T) {
	ctx := context.Background()
	dir := folder(t)
	w := newWorld(t, memory.New(), dir)
	_, err := w.c.Plugin(storemem.Plugin, nil)
	require.NoError(t, err)
	_, err = w.c.Plugin(scripted.Plugin, &scripted.Config{Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "list_dir", Arguments: map[string]any{"path": "."}}}}, {Text: "a folder"},
		{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expr": "1+2"}}}}, {Text: "3"},
		{Text: "bye"},
	}})
	require.NoError(t, err)
	agentFiber, err := w.c.Plugin(agentloop.Plugin, &agentloop.Config{System: "v1"})
	require.NoError(t, err)
	fsFiber, err := w.c.Plugin(fstools.Plugin, &fstools.Config{Root: dir})
	require.NoError(t, err)
	mgr, err := live.Sessions.Get(w.c)
	require.NoError(t, err)
	sess, err := mgr.Create(ctx)
	require.NoError(t, err)
	turn := func(prompt string) {
		a, err := agentloop.AgentService.Get(w.c)
		require.NoError(t, err)
		_, err = a.Run(ctx, sess, prompt)
		require.NoError(t, err)
	}
	turn("look")
	require.NoError(t, fsFiber.Dispose())
	_, err = w.c.Plugin(calc.Plugin, nil)
	require.NoError(t, err)
	turn("add")
	require.NoError(t, agentFiber.Dispose())
	_, err = w.c.Plugin(agentloop.Plugin, &agentloop.Config{System: "v2"})
	require.NoError(t, err)
	turn("bye")
	var reasons []string
	for _, r := range sess.Records() {
		if r.Type() == session.TypeRequestHeader {
			h, err := session.DecodeData[session.RequestHeader](r)
			require.NoError(t, err)
			reasons = append(reasons, h.Reason)
		}
	}
	require.Equal(t, []string{session.HeaderInitial, session.HeaderChange, session.HeaderResume}, reasons)

	again := newWorld(t, memory.New(), t.TempDir())
	rr, err := replay.Run(ctx, again.c, again.mgr, sess.Records())
	require.NoError(t, err)
	assert.Empty(t, rr.Errors)
	assert.True(t, rr.Identical(), "%+v", rr.Steps)
	assert.Len(t, rr.Steps, 5)
	assert.Equal(t, len(sess.Records()), len(rr.Session.Records()))
}

// TestRunKeepsWhoPostedEachTurn: a rerun's turn/start names whom the
// recorded one names.
func TestRunKeepsWhoPostedEachTurn(t *testing.T) {
	dir := folder(t)
	recs := record(t, dir).Records()
	starts := 0
	for i, r := range recs {
		if r.Type() != session.TypeTurnStart {
			continue
		}
		by, err := session.NewRecord(r.Seq(), r.Time(), session.Event{Type: r.Type(), Turn: r.Turn(), Data: session.TurnStart{By: "bob"}})
		require.NoError(t, err)
		recs[i] = by
		starts++
	}
	require.NotZero(t, starts)
	w := newWorld(t, memory.New(), t.TempDir())
	rr, err := replay.Run(context.Background(), w.c, w.mgr, recs)
	require.NoError(t, err)
	assert.Empty(t, rr.Errors)
	var posted []string
	for _, r := range rr.Session.Records() {
		if r.Type() == session.TypeTurnStart {
			s, err := session.DecodeData[session.TurnStart](r)
			require.NoError(t, err)
			posted = append(posted, s.By)
		}
	}
	assert.Len(t, posted, starts)
	for _, by := range posted {
		assert.Equal(t, "bob", by)
	}
}
