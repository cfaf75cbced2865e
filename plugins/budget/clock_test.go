package budget_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/budget"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// fakeClock is the time of the log and of the plugin alike; only a tool
// moves it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(time.Millisecond)
	return f.now
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// slowTool takes two minutes of the fake clock.
type slowTool struct{ clock *fakeClock }

func (s slowTool) Spec() session.ToolSpec {
	return session.ToolSpec{Name: "slow", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (s slowTool) Execute(context.Context, json.RawMessage) (string, error) {
	s.clock.advance(2 * time.Minute)
	return "done", nil
}

func TestWallClockLimitRefusesTheStepAfterASlowTool(t *testing.T) {
	clock := &fakeClock{now: t0}
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	c := root.Context()
	_, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	require.NoError(t, err)
	mgr := live.NewManager(c, memory.New(), live.WithClock(clock.Now))
	_, err = c.Plugin(budget.WithClock(clock.Now), &budget.Config{Turn: budget.TurnLimits{WallClock: time.Minute}})
	require.NoError(t, err)
	prov, err := scripted.New(scripted.Config{Script: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "slow", Arguments: map[string]any{}}}},
		{Text: "never asked"},
	}})
	require.NoError(t, err)
	a := agentloop.New(c, agentloop.Config{}, agentloop.WithProvider(prov), agentloop.WithTools(slowTool{clock}))
	sess, err := mgr.Create(context.Background())
	require.NoError(t, err)

	res, err := a.Run(context.Background(), sess, "go")
	be, ok := err.(*agentloop.BudgetError)
	require.True(t, ok, "error %v", err)
	assert.Equal(t, budget.LimitWallClock, be.Limit)
	assert.Equal(t, session.ReasonBudget, res.Reason)
	assert.Equal(t, 1, res.Steps)
	recs := sess.Records()
	end, err := session.DecodeData[session.TurnEnd](recs[len(recs)-1])
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(end.Error, "budget: turn 1 has run 2m0."), end.Error)
	assert.True(t, strings.HasSuffix(end.Error, "its wall-clock limit is 1m0s"), end.Error)
}
