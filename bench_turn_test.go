package vigil_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/internal/cputime"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// The cost of a turn on the paths users take, on a session of 1,000 and
// one of 10,000 messages, measured in the same run: Runtime.Turn on an
// existing session (BenchmarkTurnExisting) and a worker's job
// (BenchmarkWorkerJob). Each reports cpu-ns/turn at both sizes and
// cpu-x, the ratio of the two, which a turn whose cost does not grow
// with the log keeps near 1 (issue 30: at most 1.5). The sessions are
// seeded again every 50 turns, off the clock, so that they stay at their
// sizes; the first turn on a seeded session (its cold open) is off the
// clock too.

var turnSizes = []int{1_000, 10_000}

// BenchmarkTurnExisting runs Runtime.Turn on existing sessions.
func BenchmarkTurnExisting(b *testing.B) {
	rt := benchRuntime(b)
	ctx := context.Background()
	benchTurns(b, rt, func(id string) {
		_, err := rt.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "And one more thing."})
		require.NoError(b, err)
	})
}

// BenchmarkWorkerJob queues a turn and waits for the worker to end its
// job: enqueue, claim, the turn, finish.
func BenchmarkWorkerJob(b *testing.B) {
	rt := benchRuntime(b)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rt.Work(ctx, vigil.WorkOptions{Worker: "bench", OnJob: func(_ session.Job, _ *vigil.Result, err error) { ended <- err }})
	}()
	defer func() { cancel(); <-done }()
	benchTurns(b, rt, func(id string) {
		_, _, err := rt.QueueTurn(ctx, id, "And one more thing.")
		require.NoError(b, err)
		require.NoError(b, <-ended)
	})
}

// benchRuntime is a runtime on the in-memory store with a scripted model
// that answers every turn with a line, and the invariants plugin on.
func benchRuntime(b *testing.B) *vigil.Runtime {
	rt, err := vigil.Open(context.Background(), vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Repeat: true, Script: []scripted.Reply{{Text: "Noted."}}}),
		vigil.Plugin("agent", agentloop.Config{System: "Be brief."}),
		vigil.Plugin("invariants", invariants.Config{Mode: invariants.ModeStrict}),
	))
	require.NoError(b, err)
	b.Cleanup(func() { _ = rt.Close() })
	return rt
}

// benchTurns runs turn on a session of each of turnSizes' sizes in every
// iteration and reports their CPU times and ratio.
func benchTurns(b *testing.B, rt *vigil.Runtime, turn func(id string)) {
	const reseed = 50
	ids := make([]string, len(turnSizes))
	cpu := make([]time.Duration, len(turnSizes))
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if i%reseed == 0 {
			b.StopTimer()
			for k, n := range turnSizes {
				ids[k] = seedMessages(b, rt, n)
				turn(ids[k]) // the cold open
			}
			runtime.GC()
			b.StartTimer()
		}
		i++
		for k, id := range ids {
			c0 := cputime.Now()
			turn(id)
			cpu[k] += cputime.Now() - c0
		}
	}
	for k, n := range turnSizes {
		b.ReportMetric(float64(cpu[k].Nanoseconds())/float64(b.N), fmt.Sprintf("cpu-ns/turn@%d", n))
	}
	b.ReportMetric(float64(cpu[len(cpu)-1])/float64(cpu[0]), "cpu-x")
}

// seedMessages makes a session whose log holds n messages, in turns of
// a question and its answer (seven events a turn), and returns its id.
func seedMessages(b *testing.B, rt *vigil.Runtime, n int) string {
	mgr, err := rt.Manager()
	require.NoError(b, err)
	s, err := mgr.Seed(context.Background(), sessiontest.TextTurns(n*7/2)...)
	require.NoError(b, err)
	return s.ID()
}
