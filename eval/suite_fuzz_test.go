package eval_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-run/vigil/eval"
)

// FuzzLoadSuite: any bytes as a suite file give a suite or an error,
// never a panic; a suite loaded has its defaults set.
func FuzzLoadSuite(f *testing.F) {
	f.Add([]byte("corpus: { sessions: [x] }\ncandidate: a.yaml\nscorers: [{name: exact}]\n"))
	f.Add([]byte("corpus: { query: { since: 2026-01-01 } }\ncandidate: a.yaml\nscorers: [{name: contains, config: {texts: [a]}, threshold: 0.5}]\nbudget: {calls: 1}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("scorers: [{name: judge, config: {rubric: r}}]\njudge: {}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "suite.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := eval.LoadSuite(path)
		if err != nil {
			return
		}
		if s.Concurrency < 1 || s.Unanswered == "" || len(s.Digest) != 64 || len(s.Scorers) == 0 {
			t.Fatalf("a suite loaded without its defaults: %+v", s)
		}
	})
}
