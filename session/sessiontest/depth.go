package sessiontest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// testDepth: a [session.Depther] counts the unfinished jobs of every
// session, by kind and state, as any handle on the backing sees them.
func testDepth(t *testing.T, b *backing) {
	h, other := b.handle(t), b.handle(t)
	d, ok := other.Store.(session.Depther)
	if !ok {
		t.Skipf("%T counts no jobs", other.Store)
	}
	depth := func() []session.JobCount {
		t.Helper()
		got, err := d.Depth(context.Background())
		require.NoError(t, err)
		return got
	}
	assert.Empty(t, depth())
	h.create(t, "a", "b")
	h.enqueue(t, "a", "1")
	_, _, err := h.Enqueue(context.Background(), session.Job{Session: "a", Kind: "decide", Input: []byte("2")})
	require.NoError(t, err)
	h.enqueue(t, "b", "3")
	assert.Equal(t, []session.JobCount{
		{Kind: "decide", State: session.JobQueued, N: 1},
		{Kind: "turn", State: session.JobQueued, N: 2},
	}, depth())
	c := h.claim(t, "w")
	assert.Equal(t, []session.JobCount{
		{Kind: "decide", State: session.JobQueued, N: 1},
		{Kind: "turn", State: session.JobQueued, N: 1},
		{Kind: "turn", State: session.JobRunning, N: 1},
	}, depth())
	finish(t, c)
	assert.Equal(t, []session.JobCount{
		{Kind: "decide", State: session.JobQueued, N: 1},
		{Kind: "turn", State: session.JobQueued, N: 1},
	}, depth())
}
