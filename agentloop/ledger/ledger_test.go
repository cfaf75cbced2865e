package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/agentloop/ledger"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/memory"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(childEnv); ok {
		os.Exit(crashChild(mode))
	}
	goleak.VerifyTestMain(m)
}

var epoch = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

// stores are the stores the tests run on, each with session "s1":
// PostgreSQL too when a server is given (pgtest.EnvDSN).
func stores(t *testing.T) map[string]session.Ledger {
	t.Helper()
	js, err := jsonl.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = js.Close() })
	out := map[string]session.Ledger{"memory": memory.New(), "jsonl": js}
	if os.Getenv(pgtest.EnvDSN) != "" {
		out["postgres"] = pgtest.Store(t)
	}
	for _, l := range out {
		require.NoError(t, l.(session.Store).Create(context.Background(), session.Info{ID: "s1", Created: epoch}))
	}
	return out
}

// counted returns work that counts its runs and returns result.
func counted(runs *atomic.Int32, result string, err error) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		runs.Add(1)
		return result, err
	}
}

func TestDoRunsOncePerKey(t *testing.T) {
	for name, l := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := agentloop.ToolContext(context.Background(), "s1/call_1", l)
			var runs atomic.Int32
			first, err := ledger.Do(ctx, counted(&runs, "refunded 42", nil))
			require.NoError(t, err)
			again, err := ledger.Do(ctx, counted(&runs, "refunded twice", nil))
			require.NoError(t, err)
			assert.Equal(t, "refunded 42", first)
			assert.Equal(t, "refunded 42", again, "the second run returns the first's result")
			assert.EqualValues(t, 1, runs.Load())

			// Another call's key runs again.
			other, err := ledger.Do(agentloop.ToolContext(context.Background(), "s1/call_2", l), counted(&runs, "other", nil))
			require.NoError(t, err)
			assert.Equal(t, "other", other)
			assert.EqualValues(t, 2, runs.Load())
		})
	}
}

// Results of any bytes come back as they were.
func TestDoKeepsAnyBytes(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for name, l := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for i, want := range []string{string(all), "\xff\xfe\n\x00", "", "line\n{\"key\":1}\n"} {
				ctx := agentloop.ToolContext(context.Background(), fmt.Sprint("s1/call_", i), l)
				_, err := ledger.Do(ctx, func(context.Context) (string, error) { return want, nil })
				require.NoError(t, err)
				got, err := ledger.Do(ctx, func(context.Context) (string, error) { return "ran again", nil })
				require.NoError(t, err)
				assert.Equal(t, want, got)
			}
		})
	}
}

// A failed run records nothing: the next run of the key runs the work
// again and its result is the one kept.
func TestDoRecordsNoFailure(t *testing.T) {
	for name, l := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := agentloop.ToolContext(context.Background(), "s1/call_1", l)
			var runs atomic.Int32
			boom := errors.New("bank unavailable")
			_, err := ledger.Do(ctx, counted(&runs, "", boom))
			assert.ErrorIs(t, err, boom)
			_, ok, err := l.Lookup(context.Background(), "s1", "s1/call_1")
			require.NoError(t, err)
			assert.False(t, ok)
			got, err := ledger.Do(ctx, counted(&runs, "refunded", nil))
			require.NoError(t, err)
			assert.Equal(t, "refunded", got)
			assert.EqualValues(t, 2, runs.Load())
		})
	}
}

// Runs of one key racing in one process: the work runs once, and every
// run returns its result.
func TestDoRacingRunsOfAKeyRunTheWorkOnce(t *testing.T) {
	for name, l := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := agentloop.ToolContext(context.Background(), "s1/call_1", l)
			var runs atomic.Int32
			const n = 16
			got := make([]string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					v, err := ledger.Do(ctx, func(context.Context) (string, error) {
						runs.Add(1)
						time.Sleep(5 * time.Millisecond) // the others arrive meanwhile
						return fmt.Sprint("run ", i), nil
					})
					assert.NoError(t, err)
					got[i] = v
				})
			}
			wg.Wait()
			assert.EqualValues(t, 1, runs.Load())
			for i := range n {
				assert.Equal(t, got[0], got[i])
			}
		})
	}
}

// A run waiting for another run of its key gives up when its context is
// done.
func TestDoWaitingRunHonoursItsContext(t *testing.T) {
	l := memory.New()
	require.NoError(t, l.Create(context.Background(), session.Info{ID: "s1", Created: epoch}))
	ctx := agentloop.ToolContext(context.Background(), "s1/call_1", l)
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = ledger.Do(ctx, func(context.Context) (string, error) {
			close(started)
			<-release
			return "first", nil
		})
	}()
	<-started
	wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err := ledger.Do(wctx, func(context.Context) (string, error) { return "second", nil })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	close(release)
	<-done
	got, err := ledger.Do(ctx, func(context.Context) (string, error) { return "third", nil })
	require.NoError(t, err)
	assert.Equal(t, "first", got)
}

// Work that finished is recorded even when the turn was cancelled while
// it ran: else a finished effect would run again.
func TestDoRecordsWorkThatFinishedAfterCancel(t *testing.T) {
	l := memory.New()
	require.NoError(t, l.Create(context.Background(), session.Info{ID: "s1", Created: epoch}))
	ctx, cancel := context.WithCancel(agentloop.ToolContext(context.Background(), "s1/call_1", l))
	got, err := ledger.Do(ctx, func(context.Context) (string, error) {
		cancel()
		return "done anyway", nil
	})
	require.NoError(t, err)
	assert.Equal(t, "done anyway", got)
	v, ok, err := l.Lookup(context.Background(), "s1", "s1/call_1")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "done anyway", string(v))
}

func TestDoOutsideACallOrWithoutALedger(t *testing.T) {
	run := func(context.Context) (string, error) { t.Fatal("the work ran"); return "", nil }
	_, err := ledger.Do(context.Background(), run)
	assert.ErrorIs(t, err, ledger.ErrNoKey)
	_, err = ledger.Do(agentloop.ToolContext(context.Background(), "s1/call_1", nil), run)
	assert.ErrorIs(t, err, ledger.ErrNoLedger)
}

// A key whose session the store does not hold fails before the work
// runs: the result could not be recorded.
func TestDoOnAnUnknownSessionRunsNothing(t *testing.T) {
	l := memory.New()
	_, err := ledger.Do(agentloop.ToolContext(context.Background(), "s9/call_1", l), func(context.Context) (string, error) {
		t.Fatal("the work ran")
		return "", nil
	})
	assert.ErrorIs(t, err, session.ErrNotFound)
}

// Work that ran but whose result could not be recorded (here the store
// closes under it) returns its result with ErrNotRecorded, so the tool
// can tell the model what happened; the next run of the key runs it
// again.
func TestDoReturnsAResultItCouldNotRecord(t *testing.T) {
	dir := t.TempDir()
	js, err := jsonl.Open(dir)
	require.NoError(t, err)
	require.NoError(t, js.Create(context.Background(), session.Info{ID: "s1", Created: epoch}))
	got, err := ledger.Do(agentloop.ToolContext(context.Background(), "s1/call_1", js), func(context.Context) (string, error) {
		require.NoError(t, js.Close())
		return "refunded", nil
	})
	assert.ErrorIs(t, err, ledger.ErrNotRecorded)
	assert.ErrorIs(t, err, session.ErrClosed)
	assert.Equal(t, "refunded", got)

	js, err = jsonl.Open(dir)
	require.NoError(t, err)
	defer js.Close()
	var runs atomic.Int32
	got, err = ledger.Do(agentloop.ToolContext(context.Background(), "s1/call_1", js), counted(&runs, "refunded again", nil))
	require.NoError(t, err)
	assert.Equal(t, "refunded again", got)
	assert.EqualValues(t, 1, runs.Load())
}
