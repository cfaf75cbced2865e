package live_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// TestOriginFollowsForksUpToTheSessionARecordWasFirstIn: a record a fork
// inherited (through a fork of a fork) comes from the first session; a
// record a fork logged is its own.
func TestOriginFollowsForksUpToTheSessionARecordWasFirstIn(t *testing.T) {
	h := newHarness(t)
	root, err := h.m.Create(h.ctx)
	require.NoError(t, err)
	for _, ev := range []session.Event{
		{Type: session.TypeTurnStart, Turn: 1, Data: session.TurnStart{}},
		{Type: session.TypeUserMessage, Turn: 1, Data: session.UserMessage{Content: "hi"}},
		{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonCompleted}},
		{Type: session.TypeTurnStart, Turn: 2, Data: session.TurnStart{}},
		{Type: session.TypeUserMessage, Turn: 2, Data: session.UserMessage{Content: "again"}},
		{Type: session.TypeTurnEnd, Turn: 2, Data: session.TurnEnd{Reason: session.ReasonCompleted}},
	} {
		_, err := root.Append(h.ctx, ev)
		require.NoError(t, err)
	}
	fork, err := h.m.Fork(h.ctx, root.ID(), 5)
	require.NoError(t, err)
	forkOfFork, err := h.m.Fork(h.ctx, fork.ID(), 2)
	require.NoError(t, err)

	cases := []struct {
		seq  int64
		want string
	}{
		{0, root.ID()},
		{2, root.ID()},
		{3, forkOfFork.ID()}, // after what it inherited: its seed
		{4, forkOfFork.ID()},
	}
	for _, tc := range cases {
		got, err := forkOfFork.Origin(h.ctx, tc.seq)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "seq %d", tc.seq)
	}
	got, err := fork.Origin(h.ctx, 4)
	require.NoError(t, err)
	assert.Equal(t, root.ID(), got)
	got, err = root.Origin(h.ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, root.ID(), got)
}
