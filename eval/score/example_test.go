package score_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vigil-run/vigil/eval/score"
)

// A custom scorer in Go: a program that runs evals registers it before
// it loads a suite, and a suite names it like a built-in. This one
// checks that the candidate names every file the recorded answer names.
func Example_register() {
	type config struct {
		score.Bar
		Suffix string `json:"suffix"`
	}
	score.Register("names_files", func(_ score.Env, raw json.RawMessage) (score.Scorer, error) {
		cfg := config{Suffix: ".txt"}
		if err := score.DecodeConfig(raw, &cfg); err != nil {
			return nil, err
		}
		if err := cfg.Check(); err != nil {
			return nil, err
		}
		return namesFiles{bar: cfg.Bar, suffix: cfg.Suffix}, nil
	})

	s, err := score.New("names_files", score.Env{}, json.RawMessage(`{"suffix": ".md"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, _ := s.Score(context.Background(), score.Pair{
		Recorded:  score.Turn{Answer: "There are README.md and NOTES.md."},
		Candidate: score.Turn{Answer: "I see README.md."},
	})
	fmt.Printf("%.1f %v %s\n", r.Score, r.Pass, r.Reason)

	_, err = score.New("names_files", score.Env{}, json.RawMessage(`{"sufix": ".md"}`))
	fmt.Println(err)
	// Output:
	// 0.5 false missing NOTES.md
	// scorer names_files: config: sufix: unknown key
}

// namesFiles scores the share of the recorded answer's file names the
// candidate's answer holds.
type namesFiles struct {
	bar    score.Bar
	suffix string
}

func (n namesFiles) Score(_ context.Context, p score.Pair) (score.Result, error) {
	var names, missing []string
	for _, w := range strings.Fields(p.Recorded.Answer) {
		if w = strings.TrimRight(w, ".,;"); strings.HasSuffix(w, n.suffix) {
			names = append(names, w)
			if !strings.Contains(p.Candidate.Answer, w) {
				missing = append(missing, w)
			}
		}
	}
	if len(names) == 0 || len(missing) == 0 {
		return n.bar.Result(1, "every file named"), nil
	}
	return n.bar.Result(float64(len(names)-len(missing))/float64(len(names)), "missing "+strings.Join(missing, ", ")), nil
}
