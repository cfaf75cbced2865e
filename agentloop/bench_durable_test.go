package agentloop_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// BenchmarkTurnWithToolCallsJSONL is a turn of one step with two tool
// calls (one batch) on the JSONL store with its default group commit:
// what making a batch's tool/starts durable before it runs costs (one
// fsync per batch, on top of the step/end's and turn/end's).
func BenchmarkTurnWithToolCallsJSONL(b *testing.B) {
	root := bus.New()
	defer root.Dispose()
	store, err := jsonl.Open(b.TempDir())
	require.NoError(b, err)
	defer store.Close()
	mgr := live.NewManager(root.Context(), store)
	ctx := context.Background()
	prov, err := scripted.New(scripted.Config{Repeat: true, Script: []scripted.Reply{{
		Text: "Let me compute that.",
		ToolCalls: []scripted.ToolCall{
			{Name: "calc", Arguments: map[string]any{"expression": "21*2"}},
			{Name: "calc", Arguments: map[string]any{"expression": "6*7"}},
		},
	}}})
	require.NoError(b, err)
	a := agentloop.New(root.Context(), agentloop.Config{System: "You are a careful assistant.", Model: "scripted", MaxSteps: 1},
		agentloop.WithProvider(prov), agentloop.WithTools(calc.Tool{}))
	sess, err := mgr.Create(ctx)
	require.NoError(b, err)
	defer sess.Close(ctx)
	benchTurn(b, a, sess)
	b.ReportAllocs()
	for b.Loop() {
		benchTurn(b, a, sess)
	}
}
