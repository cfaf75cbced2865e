package mcp_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// TestASessionWithAToolListChangeReplaysIdentically: the server adds a
// tool in one step and removes it in a later turn (notifications/
// tools/list_changed each time, so the headers change mid-session);
// replayed with no server at all, every step is offered the tools in
// force then and re-sends the request it recorded.
func TestASessionWithAToolListChangeReplaysIdentically(t *testing.T) {
	h := newHost(t,
		callOf("srv_add_tool", map[string]any{"name": "late"}), say("Added."),
		callOf("srv_late", nil), say("It works."),
		callOf("srv_remove_tool", map[string]any{"name": "late"}), say("Removed."),
		say("Nothing left to do."))
	h.mcp(stdio("srv_", ""))
	s := h.session()
	h.turn(context.Background(), s, "add a tool", session.ReasonCompleted)
	require.Eventually(t, func() bool { return contains(h.toolNames(), "srv_late") }, 10*time.Second, 5*time.Millisecond)
	h.turn(context.Background(), s, "use it", session.ReasonCompleted)
	h.turn(context.Background(), s, "remove it", session.ReasonCompleted)
	require.Eventually(t, func() bool { return !contains(h.toolNames(), "srv_late") }, 10*time.Second, 5*time.Millisecond)
	h.turn(context.Background(), s, "anything?", session.ReasonCompleted)
	require.GreaterOrEqual(t, len(ofType(s, session.TypeRequestHeader)), 3, "the tool list changed twice")

	root := bus.New(bus.WithLogger(hclog.New(&hclog.LoggerOptions{Output: io.Discard})))
	t.Cleanup(func() { _ = root.Dispose() })
	c := root.Context()
	mount(t, c, invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	rr, err := replay.Run(context.Background(), c, live.NewManager(c, memory.New()), s.Records())
	require.NoError(t, err)
	assert.Empty(t, rr.Errors)
	assert.True(t, rr.Identical(), "%+v", rr.Steps)
	assert.Len(t, rr.Steps, 7)
}
