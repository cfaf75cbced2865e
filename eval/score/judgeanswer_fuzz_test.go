package score_test

import (
	"context"
	"encoding/json"
	"errors"
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

// FuzzBuiltinConfigs: whatever a suite's config holds, a built-in
// scorer's factory makes a scorer or refuses the config as a
// *ConfigError (never panics); what it makes scores a pair.
func FuzzBuiltinConfigs(f *testing.F) {
	names := []string{"exact", "normalised", "json_schema", "regexp", "contains", "trajectory", "cost", "latency", "judge"}
	for _, s := range []string{``, `null`, `{}`, `{"threshold":0.5}`, `{"pattern":"a+"}`, `{"texts":["a"]}`, `{"schema":{"type":"string"}}`,
		`{"partial":"lcs"}`, `{"max_ratio":2,"max_delta":"1s"}`, `{"rubric":"r","format":"grade"}`, `{"form":"nfc"}`, `[`, `{"a":1}`} {
		for i := range names {
			f.Add(i, s)
		}
	}
	ask := func(context.Context, string, []string, string) (string, error) {
		return `{"score": 1, "reason": "r"}`, nil
	}
	f.Fuzz(func(t *testing.T, i int, raw string) {
		name := names[uint(i)%uint(len(names))]
		s, err := score.New(name, score.Env{Dir: t.TempDir(), Ask: ask}, json.RawMessage(raw))
		if err != nil {
			if !errors.Is(err, score.ErrConfig) {
				t.Fatalf("%s: %q: not a config error: %v", name, raw, err)
			}
			return
		}
		r, err := s.Score(context.Background(), score.Pair{Recorded: score.Turn{Answer: "a"}, Candidate: score.Turn{Answer: "b"}})
		if err == nil && (math.IsNaN(r.Score) || r.Score < 0 || r.Score > 1) {
			t.Fatalf("%s: %q: score %v", name, raw, r.Score)
		}
	})
}
