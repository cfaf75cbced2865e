package eval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/eval"
	_ "github.com/vigil-run/vigil/plugins"
	"github.com/vigil-run/vigil/session"
)

// lookup is a tool whose result says which side ran it: the recording's
// ("recorded") or the candidate's ("live").
type lookup struct {
	side string
	runs *atomic.Int64
}

func (l lookup) Spec() session.ToolSpec {
	return session.ToolSpec{Name: "lookup", Description: "look a key up",
		Parameters: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`)}
}

func (l lookup) Execute(_ context.Context, args json.RawMessage) (string, error) {
	l.runs.Add(1)
	return l.side + ":" + string(args), nil
}

var recordedRuns, liveRuns atomic.Int64

func init() {
	bus.RegisterFunc("test/lookup-recorded", "", func(c *bus.Context, _ struct{}) error {
		_, err := agentloop.ProvideTool(c, lookup{side: "recorded", runs: &recordedRuns})
		return err
	})
	bus.RegisterFunc("test/lookup-live", "", func(c *bus.Context, _ struct{}) error {
		_, err := agentloop.ProvideTool(c, lookup{side: "live", runs: &liveRuns})
		return err
	})
}

func open(t *testing.T, dir, text string) *vigil.Runtime {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("plugins-%d.yaml", len(text)))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	rt, err := vigil.Open(context.Background(), func() (*config.File, error) { return config.Load(path) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// world is a store holding recorded sessions, and a candidate.
type world struct {
	dir   string
	store *vigil.Runtime
	ids   []string
}

// record runs n sessions of one turn each: the model looks "a" up, then
// answers "done".
func record(t *testing.T, n int) *world {
	dir := t.TempDir()
	rt := open(t, dir, `plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/scripted
    config:
      repeat: true
      script:
        - tool_calls: [{ name: lookup, arguments: { key: a } }]
        - text: done
  - name: test/lookup-recorded
  - name: agent
    config: { system: be brief }
`)
	mgr, err := rt.Manager()
	require.NoError(t, err)
	agent, err := rt.Agent()
	require.NoError(t, err)
	w := &world{dir: dir, store: rt}
	for i := range n {
		sess, err := mgr.Create(context.Background())
		require.NoError(t, err)
		_, err = agent.Run(context.Background(), sess, fmt.Sprintf("question %d", i))
		require.NoError(t, err)
		require.NoError(t, sess.Flush(context.Background()))
		w.ids = append(w.ids, sess.ID())
	}
	return w
}

// candidate is a composition with another system prompt whose model
// looks "a" up (the recording answers), then "b" (it cannot), then
// answers.
func (w *world) candidate(t *testing.T) eval.Candidate {
	rt := open(t, w.dir, `plugins:
  - name: provider/scripted
    config:
      repeat: true
      script:
        - tool_calls: [{ name: lookup, arguments: { key: a } }]
        - tool_calls: [{ name: lookup, arguments: { key: b } }]
        - text: done, thoroughly
  - name: store/memory
  - name: test/lookup-live
  - name: agent
    config: { system: be thorough }
`)
	agent, err := rt.Agent()
	require.NoError(t, err)
	return eval.Candidate{C: rt.Context(), Agent: agent}
}

func (w *world) suite(t *testing.T, extra string) *eval.Suite {
	path := filepath.Join(w.dir, "suite.yaml")
	text := "corpus: { query: {} }\ncandidate: c.yaml\nscorers:\n  - name: contains\n    config: { texts: [done] }\n  - name: exact\n" + extra
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	s, err := eval.LoadSuite(path)
	require.NoError(t, err)
	return s
}

func (w *world) options(t *testing.T, cand eval.Candidate) eval.Options {
	mgr, err := w.store.Manager()
	require.NoError(t, err)
	return eval.Options{Candidate: cand, Sessions: mgr, C: w.store.Context()}
}

// toolResults are the tool/result contents (or error codes) of a stored
// session, in order.
func (w *world) toolResults(t *testing.T, id string) []string {
	mgr, err := w.store.Manager()
	require.NoError(t, err)
	log, err := mgr.Store().Load(context.Background(), id)
	require.NoError(t, err)
	var out []string
	for _, r := range log.Records {
		if r.Type() != session.TypeToolResult {
			continue
		}
		res, err := session.DecodeData[session.ToolResult](r)
		require.NoError(t, err)
		if res.Error != nil {
			out = append(out, res.Error.Code)
		} else {
			out = append(out, res.Content)
		}
	}
	return out
}

// TestRunAnswersCallsAfterTheDivergence: from the divergence on, a call
// the recording made (same tool, same arguments) gets the recorded
// result without running; one it did not make is refused
// (unanswered_calls: refuse) or run by the candidate's tool (live).
func TestRunAnswersCallsAfterTheDivergence(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want []string
		runs int64
	}{
		{"refuse", []string{`recorded:{"key":"a"}`, eval.CodeNotRecorded}, 0},
		{"live", []string{`recorded:{"key":"a"}`, `live:{"key":"b"}`}, 1},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			w := record(t, 1)
			s := w.suite(t, "unanswered_calls: "+tc.mode+"\n")
			before := liveRuns.Load()
			res, err := eval.Run(context.Background(), s, w.options(t, w.candidate(t)))
			require.NoError(t, err)
			require.Len(t, res.Cases, 1)
			c := res.Cases[0]
			require.Empty(t, c.Error)
			require.NotNil(t, c.Diverged)
			assert.Equal(t, eval.Diverged{Turn: 1, Step: 1, Field: "header.system"}, *c.Diverged)
			assert.Equal(t, tc.want, w.toolResults(t, c.Candidate))
			assert.Equal(t, tc.runs, liveRuns.Load()-before)
			assert.Equal(t, 3, c.Live, "three live model requests")
			assert.Equal(t, map[string]float64{"contains": 1, "exact": 0}, means(res.Summary))
			assert.Empty(t, res.Summary.Missed)
		})
	}
}

func means(s eval.Summary) map[string]float64 {
	out := map[string]float64{}
	for _, sc := range s.Scorers {
		out[sc.Scorer] = sc.Mean
	}
	return out
}

// TestRunStopsAtTheBudgetAndResumes: a budget of 4 live calls runs the
// first of three sessions (3 calls) and refuses the second's 2nd call:
// that session is left for later, not scored, and the run says so and
// does not end. Resumed with a larger budget, the run asks only the
// two left, in the same eval session, and ends.
func TestRunStopsAtTheBudgetAndResumes(t *testing.T) {
	w := record(t, 3)
	cand := w.candidate(t)
	s := w.suite(t, "budget: { calls: 4 }\nthresholds: { mean: 0.5 }\n")
	res, err := eval.Run(context.Background(), s, w.options(t, cand))
	require.NoError(t, err)
	assert.Len(t, res.Cases, 1)
	assert.Len(t, res.NotRun, 2)
	assert.Equal(t, 4, res.Spent.Calls)
	require.NotEmpty(t, res.Summary.Missed)
	assert.Contains(t, res.Summary.Missed[len(res.Summary.Missed)-1], "2 sessions not run: the budget is spent")

	mgr, err := w.store.Manager()
	require.NoError(t, err)
	id, err := eval.Unfinished(context.Background(), mgr.Store(), s.Digest)
	require.NoError(t, err)
	require.Equal(t, res.Eval, id, "the run did not end")

	s = w.suite(t, "budget: { calls: 100 }\nthresholds: { mean: 0.5 }\n")
	// A new candidate process: its script starts over.
	o := w.options(t, w.candidate(t))
	o.Resume = id
	var skipped int
	o.Progress = func(p eval.Progress) {
		if p.Skipped {
			skipped++
		}
	}
	res, err = eval.Run(context.Background(), s, o)
	require.NoError(t, err)
	assert.Equal(t, 1, skipped)
	assert.Len(t, res.Cases, 3)
	assert.Equal(t, 6, res.Spent.Calls, "two sessions of three calls each")
	assert.Equal(t, []string{"exact: mean 0.000 is below 0.5"}, res.Summary.Missed)
	id, err = eval.Unfinished(context.Background(), mgr.Store(), s.Digest)
	require.NoError(t, err)
	assert.Empty(t, id, "the run ended")

	log, err := mgr.Store().Load(context.Background(), res.Eval)
	require.NoError(t, err)
	run, err := eval.ReadRun(res.Eval, log.Records)
	require.NoError(t, err)
	assert.Len(t, run.Cases, 3)
	require.NotNil(t, run.Summary)
	for _, c := range run.Cases {
		assert.Len(t, c.Scores, 2, "each case cites its two scores")
	}
}
