//go:build unix

package score_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/eval/score"
	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/session"
)

// startPlugin makes the plugin scorer from config (JSON with the
// binary's path filled in) and closes it at the test's end.
func startPlugin(t *testing.T, bin, config string) score.Scorer {
	t.Helper()
	s, err := score.New("plugin", score.Env{Dir: filepath.Dir(bin)}, json.RawMessage(fmt.Sprintf(config, filepath.Base(bin))))
	require.NoError(t, err)
	c, ok := s.(io.Closer)
	require.True(t, ok, "a plugin scorer holds a process: the eval closes it")
	t.Cleanup(func() { _ = c.Close() })
	return s
}

func TestPluginScorerTheExample(t *testing.T) {
	s := startPlugin(t, pluginBin(t, "lengthscorer"), `{"path": %q, "config": {"max_ratio": 1.5}}`)
	tests := []struct {
		rec, cand string
		score     float64
		pass      bool
	}{
		{"four", "four", 1, true},
		{"four", "sixsix", 1, true},
		{"four", "twelve chars", 0.5, false},
		{"ab", "ééé", 1, true},
	}
	for _, tt := range tests {
		r, err := s.Score(context.Background(), answers(tt.rec, tt.cand))
		require.NoError(t, err)
		assert.InDelta(t, tt.score, r.Score, 1e-9, r.Reason)
		assert.Equal(t, tt.pass, r.Pass, r.Reason)
	}
}

func TestPluginScorerGetsTheWholePair(t *testing.T) {
	s := startPlugin(t, pluginBin(t, "unruly"), `{"path": %q, "config": {"bonus": 0.25}, "timeout": "30s"}`)
	p := score.Pair{
		Session:  "s-1",
		Diverged: 3,
		Recorded: score.Turn{N: 2, Answer: "x", Calls: []session.ToolCall{{ID: "c1", Name: "ls", Arguments: `{"path":"."}`}}},
		Candidate: score.Turn{N: 2, Answer: "echo", Reason: "max-steps", Usage: session.Usage{Input: 120, Output: 30},
			CostUSD: 0.125, Latency: 1500 * time.Millisecond},
	}
	r, err := s.Score(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, score.Result{Score: 0.5, Reason: `s-1 d=3 n=2/2 calls=ls:{"path":"."} reason=max-steps tokens=120+30 cost=0.125 latency=1.5s bonus=0.25`}, r)

	r, err = s.Score(context.Background(), answers("a", "a"))
	require.NoError(t, err)
	assert.Equal(t, score.Result{Score: 1, Pass: true, Reason: "same"}, r)
	r, err = s.Score(context.Background(), answers("a", "b"))
	require.NoError(t, err)
	assert.Equal(t, 0.25, r.Score, "the plugin got its config")

	// The eval scores pairs at once: each call gets its own answer.
	var wg sync.WaitGroup
	results := make([]score.Result, 16)
	errs := make([]error, len(results))
	for i := range results {
		wg.Go(func() {
			a := fmt.Sprint(i % 2)
			results[i], errs[i] = s.Score(context.Background(), answers("0", a))
		})
	}
	wg.Wait()
	for i := range results {
		require.NoError(t, errs[i])
		assert.Equal(t, map[bool]float64{true: 1, false: 0.25}[i%2 == 0], results[i].Score, "pair %d", i)
	}
}

func TestPluginScorerFailures(t *testing.T) {
	s := startPlugin(t, pluginBin(t, "unruly"), `{"path": %q, "timeout": "30s"}`)
	for _, answer := range []string{"fail", "panic", "out of range"} {
		_, err := s.Score(context.Background(), answers("a", answer))
		require.Error(t, err, answer)
	}
	// The process survived those: it still scores.
	r, err := s.Score(context.Background(), answers("a", "a"))
	require.NoError(t, err)
	assert.Equal(t, 1.0, r.Score)
}

// TestPluginScorerCrashMidCall: a scorer whose process dies while it
// scores is an error naming the exit, not a hang; so is every later call.
func TestPluginScorerCrashMidCall(t *testing.T) {
	s := startPlugin(t, pluginBin(t, "unruly"), `{"path": %q, "timeout": "60s"}`)
	done := make(chan error, 1)
	go func() {
		_, err := s.Score(context.Background(), answers("a", "crash"))
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, external.ErrExited)
	case <-time.After(50 * time.Second):
		t.Fatal("a crashed scorer's call did not end")
	}
	_, err := s.Score(context.Background(), answers("a", "a"))
	require.ErrorIs(t, err, external.ErrExited)
}

// TestPluginScorerHangIsBoundedByTheTimeout: a scorer that never answers
// is the timeout's error, and the caller's cancellation ends a call too.
func TestPluginScorerHangIsBoundedByTheTimeout(t *testing.T) {
	s := startPlugin(t, pluginBin(t, "unruly"), `{"path": %q, "timeout": "500ms", "start_timeout": "60s"}`)
	_, err := s.Score(context.Background(), answers("a", "hang"))
	require.ErrorIs(t, err, external.ErrTimeout)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = s.Score(ctx, answers("a", "hang"))
	require.ErrorIs(t, err, context.Canceled)
}

func TestPluginScorerRefusals(t *testing.T) {
	bin := pluginBin(t, "unruly")
	env := score.Env{Dir: filepath.Dir(bin)}
	tests := []struct {
		name, config string
		is           error
		key          string
	}{
		{name: "not a scorer", config: `{"path": "unruly", "args": ["-not-a-scorer"]}`, is: external.ErrNotScorer},
		{name: "plugin refuses its config", config: `{"path": "unruly", "config": {"bonus": -1}}`},
		{name: "plugin's strict config", config: `{"path": "unruly", "config": {"bonsu": 1}}`},
		{name: "no path", config: `{}`, is: score.ErrConfig, key: "path"},
		{name: "unknown key", config: `{"path": "unruly", "timeuot": "1s"}`, is: score.ErrConfig, key: "timeuot"},
		{name: "bad timeout", config: `{"path": "unruly", "timeout": "soon"}`, is: score.ErrConfig, key: "timeout"},
		{name: "no such binary", config: `{"path": "nope"}`},
		{name: "wrong checksum", config: `{"path": "unruly", "sha256": "` + fmt.Sprintf("%064d", 0) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := score.New("plugin", env, json.RawMessage(tt.config))
			require.Error(t, err)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			if tt.key != "" {
				var ce *score.ConfigError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, tt.key, ce.Key)
			}
		})
	}
}

// TestPluginScorerLeavesNoProcess: Close stops the process.
func TestPluginScorerLeavesNoProcess(t *testing.T) {
	bin := pluginBin(t, "unruly")
	s, err := score.New("plugin", score.Env{Dir: filepath.Dir(bin)}, json.RawMessage(`{"path": "unruly", "config": {"bonus": 0.5}}`))
	require.NoError(t, err)
	r, err := s.Score(context.Background(), answers("a", "pid"))
	require.NoError(t, err)
	require.Equal(t, 0.5, r.Score)
	pid, err := strconv.Atoi(r.Reason)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, 0), "the scorer's process runs")
	require.NoError(t, s.(io.Closer).Close())
	assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "Close stopped and reaped the process")
}

// TestCheckStopsWhatItStarts: checking a suite's plugin scorer starts
// and configures the process, and stops it.
func TestCheckStopsWhatItStarts(t *testing.T) {
	bin := pluginBin(t, "unruly")
	env := score.Env{Dir: filepath.Dir(bin)}
	require.NoError(t, score.Check("plugin", env, json.RawMessage(`{"path": "unruly"}`)))
	require.Error(t, score.Check("plugin", env, json.RawMessage(`{"path": "unruly", "config": {"bonus": -1}}`)))
	require.ErrorIs(t, score.Check("exakt", env, nil), score.ErrUnknownScorer)
	require.NoError(t, score.Check("exact", env, nil))
}
