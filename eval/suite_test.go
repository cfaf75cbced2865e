package eval_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/eval"
)

func writeSuite(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "suite.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// TestLoadSuiteReportsEveryMistakeAtOnce: a suite with an unknown key,
// a misspelt scorer, a scorer config its scorer refuses, a value
// outside its enum and a threshold out of range gets all of them in one
// error, each at its file:line:col, with suggestions.
func TestLoadSuiteReportsEveryMistakeAtOnce(t *testing.T) {
	path := writeSuite(t, `corpus:
  sessions: [01JD8XKQ4G0W6Q1Y3T5V7X9Z0A]
candidate: new.yaml
scorers:
  - name: exakt
  - name: contains
    config: { textz: [a] }
  - name: exact
    threshold: 2
unanswered_calls: maybe
concurency: 2
`)
	_, err := eval.LoadSuite(path)
	require.Error(t, err)
	var es config.Errors
	require.True(t, errors.As(err, &es), "%v", err)
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	require.Len(t, msgs, 5, "%v", err)
	assert.Regexp(t, `suite.yaml:5:5: unknown scorer "exakt" \(did you mean "exact"\?\)`, msgs[0])
	assert.Regexp(t, `suite.yaml:6:5: contains: .*textz`, msgs[1])
	assert.Regexp(t, `suite.yaml:8:5: exact: threshold must be between 0 and 1, not 2`, msgs[2])
	assert.Regexp(t, `suite.yaml:10:19: cannot use "maybe" here: one of refuse, live`, msgs[3])
	assert.Regexp(t, `suite.yaml:11:1: unknown key "concurency" \(did you mean "concurrency"\?\)`, msgs[4])
}

func TestLoadSuiteDefaultsAndPaths(t *testing.T) {
	path := writeSuite(t, `corpus:
  files: [logs]
  query: { tenant: acme, since: 2026-11-01, until: "2026-12-01T00:00:00Z" }
candidate: candidate/plugins.yaml
scorers:
  - name: exact
  - name: exact
    id: exact-again
`)
	s, err := eval.LoadSuite(path)
	require.NoError(t, err)
	dir := filepath.Dir(path)
	assert.Equal(t, filepath.Join(dir, "candidate/plugins.yaml"), s.Candidate, "paths resolve against the suite's folder")
	assert.Equal(t, []string{filepath.Join(dir, "logs")}, s.Corpus.Files)
	assert.Equal(t, 1, s.Concurrency)
	assert.Equal(t, "refuse", s.Unanswered)
	assert.Equal(t, "2026-11-01T00:00:00Z", s.Corpus.Query.Since.Format("2006-01-02T15:04:05Z07:00"))
	assert.Len(t, s.Digest, 64)
}

func TestLoadSuiteRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"empty":           {"", `suite.yaml:1:1: the file is empty`},
		"no corpus":       {"corpus: {}\ncandidate: a.yaml\nscorers: [{name: exact}]\n", `suite.yaml:1:9: corpus: name sessions, files or a query`},
		"missing keys":    {"corpus: {sessions: [x]}\n", `missing required key "candidate"`},
		"twice":           {"corpus: {sessions: [x]}\ncandidate: a.yaml\nscorers: [{name: exact}, {name: exact}]\n", `scorer "exact" given twice: give one an id`},
		"judge no model":  {"corpus: {sessions: [x]}\ncandidate: a.yaml\nscorers: [{name: judge, config: {rubric: r}}]\n", `judge scorer needs a judge model`},
		"bad time":        {"corpus: {query: {since: yesterday}}\ncandidate: a.yaml\nscorers: [{name: exact}]\n", `suite.yaml:1:25: cannot use "yesterday" as a time`},
		"negative budget": {"corpus: {sessions: [x]}\ncandidate: a.yaml\nscorers: [{name: exact}]\nbudget: {calls: -1}\n", `suite.yaml:4:9: budget: calls, tokens and cost must not be negative`},
		"yaml syntax":     {"corpus: [\n", `suite.yaml:2:1: YAML syntax`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := eval.LoadSuite(writeSuite(t, tc.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
