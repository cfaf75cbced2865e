package score_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-run/vigil/eval/score"
	"github.com/vigil-run/vigil/session"
)

// BenchmarkNormalised: one pair of 4 KiB answers, normalised both.
func BenchmarkNormalised(b *testing.B) {
	s, err := score.New("normalised", score.Env{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("The Quick, brown ﬁx — jumps over 12 lazy dogs.  ", 80)
	p := answers(text, strings.ToUpper(text))
	b.ReportAllocs()
	for b.Loop() {
		if r, _ := s.Score(context.Background(), p); r.Score != 1 {
			b.Fatal(r.Reason)
		}
	}
}

// BenchmarkTrajectoryLCS: two trajectories of 30 calls that differ in
// one, compared by longest common subsequence.
func BenchmarkTrajectoryLCS(b *testing.B) {
	s, err := score.New("trajectory", score.Env{}, json.RawMessage(`{"partial":"lcs"}`))
	if err != nil {
		b.Fatal(err)
	}
	var rec, cand []session.ToolCall
	for i := range 30 {
		rec = append(rec, session.ToolCall{Name: "read", Arguments: fmt.Sprintf(`{"path":"f%d.txt","lines":[1,%d]}`, i, i)})
		cand = append(cand, session.ToolCall{Name: "read", Arguments: fmt.Sprintf(`{ "lines": [1, %d], "path": "f%d.txt" }`, i, i)})
	}
	cand[15].Name = "write"
	p := score.Pair{Recorded: score.Turn{Calls: rec}, Candidate: score.Turn{Calls: cand}}
	b.ReportAllocs()
	for b.Loop() {
		if r, _ := s.Score(context.Background(), p); r.Score == 1 {
			b.Fatal("equal")
		}
	}
}
