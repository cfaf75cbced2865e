package score_test

import (
	"math"
	"testing"

	"github.com/vigil-run/vigil/eval/score"
)

// FuzzParseJudgeAnswer: whatever a model answers, the parser returns a
// score in [0, 1] or an error, never panics, and a grade maps to one of
// the five steps.
func FuzzParseJudgeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"score": 0.5, "reason": "x"}`,
		`{"grade": 3, "reason": "x"}`,
		"```json\n{\"score\": 1, \"reason\": \"\"}\n```",
		"```\n{\"grade\": 1, \"reason\": \"y\"}\n```",
		`{"score": 1e-400, "reason": "tiny"}`,
		`{"score": -0, "reason": "z"}`,
		`{"score": 0, "reason": "x", "score": 1}`,
		`{"score": 1, "reason": "x"}}`,
		`[1]`, `null`, `{`, "```", "```json\n```",
	} {
		f.Add(score.JudgeScore, s)
		f.Add(score.JudgeGrade, s)
	}
	f.Fuzz(func(t *testing.T, format, answer string) {
		v, _, err := score.ParseJudgeAnswer(format, answer)
		if err != nil {
			if v != 0 {
				t.Fatalf("an error with a score %v", v)
			}
			return
		}
		if math.IsNaN(v) || v < 0 || v > 1 {
			t.Fatalf("score %v out of [0, 1] for %q", v, answer)
		}
		if format == score.JudgeGrade && v*4 != math.Trunc(v*4) {
			t.Fatalf("grade score %v is not one of the five steps", v)
		}
		if format != score.JudgeScore && format != score.JudgeGrade {
			t.Fatalf("format %q accepted", format)
		}
	})
}

// FuzzJSONEqual: equality of JSON values is reflexive and symmetric on
// any text, and never panics.
func FuzzJSONEqual(f *testing.F) {
	f.Add(`{"a":1,"b":[1,2]}`, `{"b":[1,2.0],"a":1e0}`)
	f.Add(`{"n":`, `{"n":`)
	f.Add(`1e999999999999`, `2e999999999999`)
	f.Fuzz(func(t *testing.T, a, b string) {
		if !score.JSONEqual(a, a) {
			t.Fatalf("%q is not equal to itself", a)
		}
		if score.JSONEqual(a, b) != score.JSONEqual(b, a) {
			t.Fatalf("not symmetric: %q %q", a, b)
		}
	})
}
