package budget_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// A session whose turns a budget capped and ended replays identically,
// without the budget plugin: the replay refuses the same steps with the
// recorded errors, and the capped headers are the logged ones.
func TestBudgetEndedTurnsReplayIdentically(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ name, budget string }{
		{"turn tokens", "{ turn: { tokens: 10 } }"},
		{"repeated calls", "{ max_repeats: 1 }"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := compose(t, "", c.budget)
			res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "What is in this folder?"})
			require.Error(t, err)
			require.Equal(t, session.ReasonBudget, res.Reason)
			_, _ = rt.Turn(ctx, vigil.TurnOptions{Session: res.Session, Continue: true})
			_, _ = rt.Turn(ctx, vigil.TurnOptions{Session: res.Session, Prompt: "and again"})
			recs := verified(t, rt, res.Session)
			require.NotEmpty(t, session.BudgetStops(recs))

			root := bus.New()
			t.Cleanup(func() { _ = root.Dispose() })
			bc := root.Context()
			_, err = bc.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
			require.NoError(t, err)
			rr, err := replay.Run(ctx, bc, live.NewManager(bc, memory.New()), recs)
			require.NoError(t, err)
			assert.True(t, rr.Identical(), "%+v", rr.Steps)
		})
	}
}
