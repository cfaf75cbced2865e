package vigil_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session/live"
)

// Runtime.Turn keeps the session open for the next turn, within the
// limits WithHotSessions sets; with none, it closes it as the turn ends.
func TestTurnKeepsTheSessionHot(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []vigil.Option
		kept bool
	}{
		{"default", nil, true},
		{"none", []vigil.Option{vigil.WithHotSessions(live.HotLimits{})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rt, err := vigil.Open(ctx, vigil.Compose(
				vigil.Plugin("store/memory", nil),
				vigil.Plugin("provider/scripted", scripted.Config{Repeat: true, Script: []scripted.Reply{{Text: "Noted."}}}),
				vigil.Plugin("agent", agentloop.Config{System: "Be brief."}),
			), tc.opts...)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, rt.Close()) })
			res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "one"})
			require.NoError(t, err)
			mgr, err := rt.Manager()
			require.NoError(t, err)
			first, ok := mgr.Get(res.Session)
			require.Equal(t, tc.kept, ok)
			_, err = rt.Turn(ctx, vigil.TurnOptions{Session: res.Session, Prompt: "two"})
			require.NoError(t, err)
			second, ok := mgr.Get(res.Session)
			require.Equal(t, tc.kept, ok)
			if tc.kept {
				require.Same(t, first, second, "the second turn reopened the session")
			}
		})
	}
}
