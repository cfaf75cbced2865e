package a2aserve

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	_ "github.com/vigil-run/vigil/plugins/store/memory" // store/memory, by name
	"github.com/vigil-run/vigil/session"
)

// A message/stream whose task a worker ran to its end before the stream
// first looked still shows the whole turn: the task as it started, every
// chunk, then the answer and the final status. A resubscription shows the
// task from then on: completed, nothing more.
func TestAStreamShowsTheWholeTurnHoweverFastAWorkerRanIt(t *testing.T) {
	ctx := context.Background()
	rt, err := vigil.Open(ctx, vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "One, two."}}}),
		vigil.Plugin("agent", agentloop.Config{}),
	))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	s, err := New(rt, Options{})
	require.NoError(t, err)
	id, err := rt.NewSession(ctx)
	require.NoError(t, err)
	job, _, err := rt.QueueTurn(ctx, id, "count", vigil.RunAgent("agent"))
	require.NoError(t, err)

	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rt.Work(wctx, vigil.WorkOptions{Worker: "w", OnJob: func(session.Job, *vigil.Result, error) { stop() }})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not end")
	}

	ref := taskRef{session: id, job: job.ID, agent: "agent"}
	events := func(whole bool) []a2a.Event {
		var out []a2a.Event
		for ev, err := range s.watch(ctx, ref, whole) {
			require.NoError(t, err)
			out = append(out, ev)
		}
		return out
	}

	got := events(true)
	require.GreaterOrEqual(t, len(got), 4, "%#v", got)
	first, ok := got[0].(*a2a.Task)
	require.True(t, ok, "%T", got[0])
	assert.Equal(t, a2a.TaskStateWorking, first.Status.State)
	assert.Empty(t, first.Artifacts)
	var chunks string
	for _, ev := range got[1 : len(got)-2] {
		up, ok := ev.(*a2a.TaskArtifactUpdateEvent)
		require.True(t, ok, "%T", ev)
		assert.True(t, up.Append)
		chunks += up.Artifact.Parts[0].(a2a.TextPart).Text
	}
	assert.Equal(t, "One, two.", chunks)
	answer, ok := got[len(got)-2].(*a2a.TaskArtifactUpdateEvent)
	require.True(t, ok, "%T", got[len(got)-2])
	assert.False(t, answer.Append)
	final, ok := got[len(got)-1].(*a2a.TaskStatusUpdateEvent)
	require.True(t, ok, "%T", got[len(got)-1])
	assert.True(t, final.Final)
	assert.Equal(t, a2a.TaskStateCompleted, final.Status.State)

	again := events(false)
	require.Len(t, again, 1)
	task, ok := again[0].(*a2a.Task)
	require.True(t, ok, "%T", again[0])
	assert.Equal(t, a2a.TaskStateCompleted, task.Status.State)
}
