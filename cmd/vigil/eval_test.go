package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	junit "github.com/joshdk/go-junit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/eval"
)

// evalServer is an OpenAI-compatible server for evals: a judge's
// one-shot (its instruction asks for a grade) is answered with a score,
// any other request with an answer naming the system prompt it was sent
// and the answer proper, "42". It counts the requests of each kind;
// hold, when set, is called before answering a model request (not a
// judge's).
type evalServer struct {
	*httptest.Server
	model, judge atomic.Int64
	hold         atomic.Pointer[func(n int64)]
}

func newEvalServer(t *testing.T) *evalServer {
	s := &evalServer{}
	s.Server = chatServer(t, "evalServer", func(msgs []chatMessage) []string {
		system, last := "", ""
		for _, m := range msgs {
			if m.Role == "system" {
				system = fmt.Sprint(m.Content)
			}
			last = fmt.Sprint(m.Content)
		}
		if strings.Contains(last, "You are grading an answer") {
			s.judge.Add(1)
			return textChoices(`{"score": 0.75, "reason": "the answer is right, the wording differs"}`)
		}
		n := s.model.Add(1)
		if hold := s.hold.Load(); hold != nil {
			(*hold)(n)
		}
		return textChoices("asked as: " + system + ". The answer is 42.")
	})
	return s
}

// evalComposition is a plugins.yaml over srv with the system prompt
// system, storing sessions in dir/sessions.
func evalComposition(srv *evalServer, system string) string {
	return fmt.Sprintf(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/openai
    config: { base_url: "%s/v1", api_key: test-key, model: m }
  - name: agent
    config: { model: m, system: %q }
  - name: invariants
`, srv.URL, system)
}

// recordSessions runs each prompt as a session of the composition in
// dir and returns their ids.
func recordSessions(t *testing.T, dir string, prompts ...string) []string {
	t.Helper()
	var ids []string
	for _, p := range prompts {
		_, stderr, err := vigilIn(t, dir, "", "run", p)
		require.NoError(t, err, stderr)
		ids = append(ids, sessionIDIn(t, stderr))
	}
	return ids
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// TestEvalScoresAChangedSystemPrompt: two sessions recorded against the
// wire-faithful fake server are evaluated twice. The recorded
// composition as candidate replays every request identically (no live
// call): exact scores 1. A candidate with another system prompt diverges
// at turn 1 step 1 (header.system), is asked live, and scores lower on
// exact (its wording differs) but higher on contains (the answer, 42, is
// there) and the judge; its exact threshold is missed: exit 1. The eval
// sessions verify, the judge's one-shots in them included; the JUnit XML
// parses with a JUnit reader; eval diff compares the two runs.
func TestEvalScoresAChangedSystemPrompt(t *testing.T) {
	srv := newEvalServer(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "plugins.yaml"), evalComposition(srv, "be brief"))
	writeFile(t, filepath.Join(dir, "thorough.yaml"), evalComposition(srv, "be thorough"))
	ids := recordSessions(t, dir, "what is six times seven?", "and seven times six?")
	suite := func(candidate string) string {
		return fmt.Sprintf(`corpus:
  sessions: [%s]
  files: [sessions/%s.jsonl]
candidate: %s
scorers:
  - name: exact
    threshold: 0.9
  - name: contains
    config: { texts: ["42"] }
  - name: judge
    config: { rubric: "The answer says 42.", threshold: 0.5 }
judge: { model: m }
concurrency: 2
`, ids[0], ids[1], candidate)
	}
	writeFile(t, filepath.Join(dir, "same.yaml"), suite("plugins.yaml"))
	writeFile(t, filepath.Join(dir, "changed.yaml"), suite("thorough.yaml"))
	recorded := srv.model.Load()

	stdout, stderr, err := vigilIn(t, dir, "", "eval", "same.yaml", "--json")
	require.NoError(t, err, stderr)
	var same eval.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &same), stdout)
	assert.Equal(t, recorded, srv.model.Load(), "the recorded composition is answered from the recording alone")
	assert.Zero(t, same.Spent.Calls-int(srv.judge.Load()), "only the judge was asked live")
	require.Len(t, same.Cases, 2)
	for _, c := range same.Cases {
		assert.Nil(t, c.Diverged, "%+v", c)
	}
	means := scorerMeans(same.Summary)
	assert.Equal(t, map[string]float64{"exact": 1, "contains": 1, "judge": 0.75}, means)

	stdout, stderr, err = vigilIn(t, dir, "", "eval", "changed.yaml", "--junit", "eval.xml")
	require.Equal(t, exitFailed, exitStatus(err), "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "missed: exact: mean 0.000 is below 0.9", stdout)
	assert.Contains(t, stdout, "turn 1 step 1 header.system", stdout)
	assert.Regexp(t, `(?m)^contains\s+1\.000\s+2/2`, stdout)
	assert.Regexp(t, `(?m)^exact\s+0\.000\s+0/2\s+≥ 0\.9`, stdout)
	assert.Contains(t, stderr, "[2/2]", "progress goes to stderr")
	assert.Equal(t, recorded+2, srv.model.Load(), "one live request per diverged turn")
	changedID := regexpFind(t, `eval session (\S+):`, stdout)

	// The JUnit XML, read by a JUnit reader: a suite per scorer, a case
	// per pair, exact's failed.
	suites, err := junit.IngestFile(filepath.Join(dir, "eval.xml"))
	require.NoError(t, err)
	got := map[string][2]int{}
	for _, s := range suites {
		got[s.Name] = [2]int{s.Totals.Tests, s.Totals.Failed}
	}
	assert.Equal(t, map[string][2]int{"exact": {2, 2}, "contains": {2, 0}, "judge": {2, 0}}, got)

	// Both eval sessions verify: the judge's one-shots are re-derived
	// from the records they cite.
	for _, id := range []string{same.Eval, changedID} {
		out, stderr, err := vigilIn(t, dir, "", "verify", id)
		require.NoError(t, err, "verify %s:\n%s\n%s", id, out, stderr)
	}
	log, err := os.ReadFile(filepath.Join(dir, "sessions", changedID+".jsonl"))
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(log), `"type":"request/oneshot"`), "a judge one-shot per pair")
	assert.Equal(t, 2, strings.Count(string(log), `"type":"eval/case"`))
	assert.Equal(t, 6, strings.Count(string(log), `"type":"eval/score"`))

	// The diff of the two runs: exact fell by 1, contains held.
	stdout, stderr, err = vigilIn(t, dir, "", "eval", "diff", same.Eval, changedID, "--json")
	require.NoError(t, err, stderr)
	var d eval.Diff
	require.NoError(t, json.Unmarshal([]byte(stdout), &d), stdout)
	deltas := map[string]float64{}
	for _, s := range d.Scorers {
		deltas[s.Scorer] = s.Delta
	}
	assert.Equal(t, map[string]float64{"exact": -1, "contains": 0, "judge": 0}, deltas)
	assert.Len(t, d.Changed, 2)
}

func scorerMeans(s eval.Summary) map[string]float64 {
	out := map[string]float64{}
	for _, sc := range s.Scorers {
		out[sc.Scorer] = sc.Mean
	}
	return out
}

// TestEvalResumesAKilledRun: a run of three sessions, one at a time, is
// killed (SIGKILL, a real process) while the candidate's live request
// for the second waits at the server. Running the suite again resumes
// the eval session: the first session is not asked again, the second
// and third are, and the run ends with all three.
func TestEvalResumesAKilledRun(t *testing.T) {
	srv := newEvalServer(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "plugins.yaml"), evalComposition(srv, "be brief"))
	writeFile(t, filepath.Join(dir, "thorough.yaml"), evalComposition(srv, "be thorough"))
	recordSessions(t, dir, "one?", "two?", "three?")
	writeFile(t, filepath.Join(dir, "suite.yaml"), `corpus:
  query: { tenant: default }
candidate: thorough.yaml
scorers:
  - name: contains
    config: { texts: ["42"] }
`)
	base := srv.model.Load()
	second := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	hold := func(n int64) {
		if n == base+2 {
			once.Do(func() { close(second) })
			<-release
		}
	}
	srv.hold.Store(&hold)
	cmd := exec.Command("vigil", "eval", "suite.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "VIGIL_SHOW_EXIT=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	select {
	case <-second:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the second session was never asked:\n%s", stderr.String())
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	close(release)
	evalID := regexpFind(t, `eval session (\S+):`, stderr.String())
	asked := srv.model.Load() - base
	require.Equal(t, int64(2), asked)

	stdout, errOut, err := vigilIn(t, dir, "", "eval", "suite.yaml", "--json")
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "resuming eval session "+evalID)
	assert.Contains(t, errOut, "done in the run resumed")
	var res eval.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	assert.Equal(t, evalID, res.Eval)
	assert.Len(t, res.Cases, 3)
	assert.Equal(t, int64(2), srv.model.Load()-base-asked, "the finished session is not asked again")
	assert.Equal(t, 2, res.Spent.Calls, "this process's live calls")

	// The run ended: running the suite again starts a new one.
	_, errOut, err = vigilIn(t, dir, "", "eval", "suite.yaml", "--json")
	require.NoError(t, err, errOut)
	assert.NotContains(t, errOut, "resuming")
	out, errOut, err := vigilIn(t, dir, "", "verify", evalID)
	require.NoError(t, err, "%s\n%s", out, errOut)
}

func regexpFind(t *testing.T, expr, s string) string {
	t.Helper()
	m := regexp.MustCompile(expr).FindStringSubmatch(s)
	require.NotNil(t, m, "no %s in %q", expr, s)
	return m[1]
}
