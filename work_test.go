package vigil_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	_ "github.com/vigil-run/vigil/plugins/store/memory" // store/memory, by name
	"github.com/vigil-run/vigil/session"
)

// blocker is a tool that runs until its context is done, announcing on
// started that it runs.
type blocker struct{ started chan struct{} }

func (b *blocker) Spec() session.ToolSpec {
	return session.ToolSpec{Name: "wait", Description: "waits", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (b *blocker) Execute(ctx context.Context, _ json.RawMessage) (string, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	return "", ctx.Err()
}

var theBlocker = &blocker{started: make(chan struct{}, 1)}

func init() {
	bus.RegisterFunc("test/wait", "a tool that waits for its context", func(c *bus.Context, _ struct{}) error {
		_, err := agentloop.ProvideTool(c, theBlocker)
		return err
	})
}

// jobs runs a worker on rt and returns the jobs it ends, in order, on a
// channel; the worker stops when the test ends.
func jobs(t *testing.T, rt *vigil.Runtime, concurrency int) <-chan session.Job {
	t.Helper()
	out := make(chan session.Job, 64)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		assert.NoError(t, rt.Work(ctx, vigil.WorkOptions{Worker: "w", Concurrency: concurrency,
			OnJob: func(j session.Job, _ *vigil.Result, _ error) { out <- j }}))
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return out
}

func waitJobs(t *testing.T, ch <-chan session.Job, n int) []session.Job {
	t.Helper()
	var got []session.Job
	timeout := time.After(30 * time.Second)
	for len(got) < n {
		select {
		case j := <-ch:
			got = append(got, j)
		case <-timeout:
			t.Fatalf("%d of %d jobs ended", len(got), n)
		}
	}
	return got
}

// Turns queued on two sessions before any worker runs survive until one
// does; then each session's run in the order they were queued, and the
// logs are valid.
func TestWorkRunsQueuedTurnsInOrder(t *testing.T) {
	ctx := context.Background()
	rt := open(t, vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "ok"}}, Repeat: true}),
		vigil.Plugin("agent", nil),
	))
	var ids []string
	for range 2 {
		id, err := rt.NewSession(ctx)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	for i, p := range []string{"a1", "b1", "a2", "b2", "a3", "b3"} {
		_, pos, err := rt.QueueTurn(ctx, ids[i%2], p)
		require.NoError(t, err)
		assert.Equal(t, i/2, pos, p)
	}
	waitJobs(t, jobs(t, rt, 2), 6)
	for i, id := range ids {
		log, err := rt.Session(ctx, id)
		require.NoError(t, err)
		var prompts []string
		for _, r := range log.Records {
			if r.Type() == session.TypeUserMessage {
				m, err := session.DecodeData[session.UserMessage](r)
				require.NoError(t, err)
				prompts = append(prompts, m.Content)
			}
		}
		want := []string{"a1", "a2", "a3"}
		if i == 1 {
			want = []string{"b1", "b2", "b3"}
		}
		assert.Equal(t, want, prompts)
		verified(t, log)
	}
}

// Cancelling a session cancels the job running on it: its turn ends
// aborted, and the job is finished.
func TestCancelStopsTheRunningTurn(t *testing.T) {
	ctx := context.Background()
	rt := open(t, vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{
			{ToolCalls: []scripted.ToolCall{{Name: "wait", Arguments: map[string]any{}}}}, {Text: "never"}}}),
		vigil.Plugin("test/wait", nil),
		vigil.Plugin("agent", nil),
	))
	id, err := rt.NewSession(ctx)
	require.NoError(t, err)
	_, _, err = rt.QueueTurn(ctx, id, "wait")
	require.NoError(t, err)
	_, _, err = rt.QueueTurn(ctx, id, "queued behind")
	require.NoError(t, err)
	done := jobs(t, rt, 1)
	<-theBlocker.started
	q, err := rt.Queue()
	require.NoError(t, err)
	n, err := q.Cancel(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	waitJobs(t, done, 1)
	left, err := q.Jobs(ctx, id)
	require.NoError(t, err)
	assert.Empty(t, left)
	log, err := rt.Session(ctx, id)
	require.NoError(t, err)
	last := log.Records[len(log.Records)-1]
	require.Equal(t, session.TypeTurnEnd, last.Type())
	end, err := session.DecodeData[session.TurnEnd](last)
	require.NoError(t, err)
	assert.Equal(t, session.ReasonAborted, end.Reason)
	verified(t, log)
}

// A decision queued on a call that does not wait is refused at once.
func TestQueueDecisionRefusesWhatIsNotPending(t *testing.T) {
	ctx := context.Background()
	rt := open(t, vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", nil),
		vigil.Plugin("agent", nil),
	))
	id, err := rt.NewSession(ctx)
	require.NoError(t, err)
	_, _, err = rt.QueueDecision(ctx, id, "c1", vigil.Decision{Allow: true})
	assert.ErrorIs(t, err, session.ErrUnknownCall)
	_, _, err = rt.QueueDecision(ctx, "nosuch", "c1", vigil.Decision{Allow: true})
	assert.ErrorIs(t, err, vigil.ErrNotFound)
	q, err := rt.Queue()
	require.NoError(t, err)
	left, err := q.Jobs(ctx, id)
	require.NoError(t, err)
	assert.Empty(t, left)
}

// verified requires log to pass the invariants' offline rules.
func verified(t *testing.T, log *session.Log) {
	t.Helper()
	data := session.AppendHeaderLine(nil, log.Info)
	for _, r := range log.Records {
		data = r.AppendLine(data)
	}
	rep, err := invariants.Verify(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
}
