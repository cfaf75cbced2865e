package invariants_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// world is a bus with a session manager over a memory store.
type world struct {
	root *bus.Root
	mgr  *live.Manager
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	clock := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	mgr := live.NewManager(root.Context(), memory.New(), live.WithClock(func() time.Time { return clock }))
	return &world{root: root, mgr: mgr}
}

func (w *world) mount(t *testing.T, mode string) *bus.Fiber {
	t.Helper()
	f, err := w.root.Context().Plugin(invariants.New(), &invariants.Config{Mode: mode})
	require.NoError(t, err)
	return f
}

func appendAll(t *testing.T, s *live.Session, evs ...session.Event) {
	t.Helper()
	for _, ev := range evs {
		_, err := s.Append(context.Background(), ev)
		require.NoError(t, err, "append %s", ev.Type)
	}
}

func turnStart(n int) session.Event {
	return session.Event{Type: session.TypeTurnStart, Turn: n, Data: session.TurnStart{}}
}
func turnEnd(n int) session.Event {
	return session.Event{Type: session.TypeTurnEnd, Turn: n, Data: session.TurnEnd{Reason: session.ReasonCompleted}}
}
func stepStart(turn, step int) session.Event {
	return session.Event{Type: session.TypeStepStart, Turn: turn, Step: step, Data: session.StepStart{}}
}
func stepEnd(turn, step int) session.Event {
	return session.Event{Type: session.TypeStepEnd, Turn: turn, Step: step, Data: session.StepEnd{Finish: session.FinishStop}}
}
func user(turn int, text string) session.Event {
	return session.Event{Type: session.TypeUserMessage, Turn: turn, Data: session.UserMessage{Content: text}}
}

func requireViolation(t *testing.T, err error, rule string) *invariants.InvariantError {
	t.Helper()
	var ie *invariants.InvariantError
	require.True(t, errors.As(err, &ie), "want an InvariantError %s, got %v", rule, err)
	assert.Equal(t, invariants.Code, ie.Code)
	assert.Equal(t, rule, ie.Rule, ie.Error())
	return ie
}

func TestStrictRefusesAppendAndCommitsNothing(t *testing.T) {
	w := newWorld(t)
	w.mount(t, invariants.ModeStrict)
	s, err := w.mgr.Create(context.Background())
	require.NoError(t, err)
	appendAll(t, s, turnStart(1), user(1, "hi"))

	_, err = s.Append(context.Background(), turnStart(2))
	ie := requireViolation(t, err, invariants.RuleTurnNesting)
	assert.Equal(t, s.ID(), ie.Session)
	assert.Equal(t, int64(2), ie.Seq)
	assert.Equal(t, 2, s.Len(), "a refused event is not committed")

	// The trace did not advance: the valid continuation is accepted.
	appendAll(t, s, stepStart(1, 1), stepEnd(1, 1), turnEnd(1))
}

func TestLaterVetoLeavesTraceUntouched(t *testing.T) {
	w := newWorld(t)
	w.mount(t, invariants.ModeStrict)
	veto := true
	bus.Veto.On(w.root.Context(), func(_ context.Context, d bus.Dispatch) error {
		if c, ok := d.Payload.(live.Commit); ok && veto && c.Record().Type() == session.TypeTurnStart {
			return errors.New("not now")
		}
		return nil
	})
	s, err := w.mgr.Create(context.Background())
	require.NoError(t, err)
	_, err = s.Append(context.Background(), turnStart(1))
	require.ErrorContains(t, err, "not now")
	assert.Equal(t, 0, s.Len())
	veto = false
	// Had the invariant applied the vetoed turn/start, this would be a
	// turn-nesting violation (turn 1 already open) or a seq-order one.
	appendAll(t, s, turnStart(1), user(1, "hello"), turnEnd(1))
}

func TestCommitWithoutStagedValidationIsStagingViolation(t *testing.T) {
	w := newWorld(t)
	w.mount(t, invariants.ModeStrict)
	s, err := w.mgr.Create(context.Background())
	require.NoError(t, err)
	appendAll(t, s, turnStart(1))
	// A commit is made only by an append, so the record that reaches the
	// post-commit listener without having passed internal/dispatch is
	// one the check refused, whose commit a veto listener kept.
	var kept live.Commit
	bus.Veto.On(w.root.Context(), func(_ context.Context, d bus.Dispatch) error {
		if cm, ok := d.Payload.(live.Commit); ok {
			kept = cm
		}
		return nil
	}, bus.Prepend)
	_, err = s.Append(context.Background(), session.Event{Type: session.TypeTurnEnd, Turn: 2, Data: session.TurnEnd{Reason: session.ReasonCompleted}})
	requireViolation(t, err, invariants.RuleTurnNesting)
	require.False(t, kept.IsZero())
	err = live.Committed.Observe(context.Background(), w.root.Context(), kept)
	requireViolation(t, err, invariants.RuleStaging)
}

func TestWarnModeReportsAndRefusesNothing(t *testing.T) {
	w := newWorld(t)
	w.mount(t, invariants.ModeWarn)
	var got []*invariants.Violation
	invariants.ViolationEvent.On(w.root.Context(), func(_ context.Context, v *invariants.Violation) error {
		got = append(got, v)
		return nil
	})
	s, err := w.mgr.Create(context.Background())
	require.NoError(t, err)
	appendAll(t, s, turnEnd(1))
	require.Len(t, got, 1)
	assert.Equal(t, invariants.RuleTurnNesting, got[0].Rule)
	assert.Equal(t, 1, s.Len())
}

func TestOffModeRegistersNothing(t *testing.T) {
	w := newWorld(t)
	names := []string{bus.Veto.Name(), live.Committed.Name(), live.Created.Name(), agentloop.LLMStream.Name(), agentloop.StatusEvent.Name()}
	before := map[string]int{}
	for _, n := range names {
		before[n] = w.root.ListenerCount(n)
	}
	w.mount(t, invariants.ModeOff)
	for _, n := range names {
		assert.Equal(t, before[n], w.root.ListenerCount(n), n)
	}
	f := w.mount(t, invariants.ModeStrict)
	assert.Greater(t, w.root.ListenerCount(bus.Veto.Name()), before[bus.Veto.Name()])
	require.NoError(t, f.Dispose())
	for _, n := range names {
		assert.Equal(t, before[n], w.root.ListenerCount(n), "disposed plugin leaves no listener on %s", n)
	}
}

func TestHotReloadRebuildsTraceOfLiveSessions(t *testing.T) {
	w := newWorld(t)
	s, err := w.mgr.Create(context.Background())
	require.NoError(t, err)
	appendAll(t, s, turnStart(1), user(1, "before the plugin"), stepStart(1, 1))
	// Mounted mid-turn, mid-step: it depends on the sessions service.
	_, err = live.Sessions.Provide(w.root.Context(), w.mgr)
	require.NoError(t, err)
	w.mount(t, invariants.ModeStrict)
	appendAll(t, s, stepEnd(1, 1), turnEnd(1))
	_, err = s.Append(context.Background(), stepStart(1, 2))
	requireViolation(t, err, invariants.RuleStepNesting)
}

func TestSeededAndForkedSessionsAreReplayed(t *testing.T) {
	w := newWorld(t)
	w.mount(t, invariants.ModeStrict)
	seeded, err := w.mgr.Seed(context.Background(), turnStart(1), user(1, "seeded"), turnEnd(1))
	require.NoError(t, err)
	appendAll(t, seeded, turnStart(2), turnEnd(2))
	_, err = seeded.Append(context.Background(), turnStart(2))
	requireViolation(t, err, invariants.RuleTurnNesting)

	fork, err := w.mgr.Fork(context.Background(), seeded.ID(), 2)
	require.NoError(t, err)
	appendAll(t, fork, turnStart(2), turnEnd(2))
}

func TestStatusTransitions(t *testing.T) {
	w := newWorld(t)
	w.mount(t, invariants.ModeStrict)
	c := w.root.Context()
	emit := func(from, to agentloop.Status) error {
		return agentloop.StatusEvent.Emit(context.Background(), c, agentloop.StatusChange{Agent: "a1", From: from, To: to})
	}
	require.NoError(t, emit(agentloop.StatusIdle, agentloop.StatusRunning))
	require.NoError(t, emit(agentloop.StatusRunning, agentloop.StatusIdle))
	requireViolation(t, emit(agentloop.StatusIdle, agentloop.StatusIdle), invariants.RuleStatusTransition)
	requireViolation(t, emit(agentloop.StatusRunning, agentloop.StatusIdle), invariants.RuleStatusTransition)
	require.NoError(t, emit(agentloop.StatusIdle, agentloop.StatusDisposed))
	requireViolation(t, emit(agentloop.StatusDisposed, agentloop.StatusIdle), invariants.RuleStatusTransition)
}

func TestScopedMountStillSeesEverySession(t *testing.T) {
	w := newWorld(t)
	scoped := w.root.Context().Scope(func(subject any) bool { return subject == "nobody" })
	_, err := scoped.Plugin(invariants.New(), nil)
	require.NoError(t, err)
	s, err := w.mgr.Create(context.Background())
	require.NoError(t, err)
	_, err = s.Append(context.Background(), turnEnd(1))
	requireViolation(t, err, invariants.RuleTurnNesting)
}

// A request whose fold holds a tool result whose call a replace took away
// is refused as orphaned-tool-result, though it equals the fold, whether
// the orphan comes with the seeded log or is made by a replace appended
// live.
func TestOrphanedToolResultIsRefused(t *testing.T) {
	call := session.ToolCall{ID: "c1", Name: "calc", Arguments: "{}"}
	turn := []session.Event{
		turnStart(1), user(1, "hello"), stepStart(1, 1),
		{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: "c1", Name: "calc", Arguments: "{}"}}},
		{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Sources: []int64{3}, Data: session.AssistantMessage{ToolCalls: []session.ToolCall{call}}},
		{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: call},
		{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{5}, Data: session.ToolResult{ID: "c1", Name: "calc", Content: "2"}},
		stepEnd(1, 1), turnEnd(1),
	}
	// The summary replaces the assistant message (seq 4) alone.
	summary := session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: 4, End: 4},
		Sources: []int64{4}, Data: session.UserMessage{Content: "summary"}}
	for _, live := range []bool{false, true} {
		t.Run(fmt.Sprintf("live=%v", live), func(t *testing.T) {
			w := newWorld(t)
			w.mount(t, invariants.ModeStrict)
			evs := turn
			if !live {
				evs = append(slices.Clone(turn), summary)
			}
			s, err := w.mgr.Seed(context.Background(), evs...)
			require.NoError(t, err)
			if live {
				appendAll(t, s, summary)
			}
			prov, err := scripted.New(scripted.Config{Script: []scripted.Reply{{Text: "hi"}}})
			require.NoError(t, err)
			a := agentloop.New(w.root.Context(), agentloop.Config{}, agentloop.WithProvider(prov))
			_, err = a.Run(context.Background(), s, "next")
			requireViolation(t, err, invariants.RuleOrphanedToolResult)
		})
	}
}
