package score_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/eval/score"
	"github.com/vigil-run/vigil/session"
)

// answers is a pair whose turns answered rec and cand.
func answers(rec, cand string) score.Pair {
	return score.Pair{Recorded: score.Turn{Prompt: "q", Answer: rec}, Candidate: score.Turn{Prompt: "q", Answer: cand}}
}

// calls is a pair whose turns made these calls (name, arguments, …).
func calls(rec, cand []string) score.Pair {
	mk := func(nv []string) []session.ToolCall {
		var out []session.ToolCall
		for i := 0; i+1 < len(nv); i += 2 {
			out = append(out, session.ToolCall{ID: "c", Name: nv[i], Arguments: nv[i+1]})
		}
		return out
	}
	return score.Pair{Recorded: score.Turn{Calls: mk(rec)}, Candidate: score.Turn{Calls: mk(cand)}}
}

// spent is a pair whose turns cost and took this much.
func spent(recUSD, candUSD float64, recTok, candTok int, recT, candT time.Duration) score.Pair {
	return score.Pair{
		Recorded:  score.Turn{CostUSD: recUSD, Usage: session.Usage{Input: recTok}, Latency: recT},
		Candidate: score.Turn{CostUSD: candUSD, Usage: session.Usage{Input: candTok}, Latency: candT},
	}
}

func TestBuiltinScorers(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "answer.schema.json"),
		[]byte(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}`), 0o644))
	tests := []struct {
		name, scorer, config string
		pair                 score.Pair
		score                float64
		pass                 bool
	}{
		{"exact equal", "exact", ``, answers("Paris", "Paris"), 1, true},
		{"exact differs by case", "exact", ``, answers("Paris", "paris"), 0, false},
		{"exact differs by a space", "exact", `{}`, answers("Paris", "Paris "), 0, false},

		{"normalised case and space", "normalised", ``, answers("The capital is Paris.", "  the CAPITAL\tis  paris "), 1, true},
		{"normalised punctuation", "normalised", ``, answers("Yes, it's 42!", "yes its 42"), 1, true},
		{"normalised nfkc ligature and width", "normalised", ``, answers("ﬁle ＡＢＣ", "file abc"), 1, true},
		{"normalised fold sharp s", "normalised", ``, answers("STRASSE", "straße"), 1, true},
		{"normalised nfc composes", "normalised", `{"form":"nfc"}`, answers("café", "cafe\u0301"), 1, true},
		{"normalised none keeps decomposed", "normalised", `{"form":"none"}`, answers("café", "cafe\u0301"), 0, false},
		{"normalised other words", "normalised", ``, answers("Paris", "London"), 0, false},
		{"normalised keep_case", "normalised", `{"keep_case":true}`, answers("Paris", "paris"), 0, false},
		{"normalised keep_punctuation", "normalised", `{"keep_punctuation":true}`, answers("Paris.", "Paris"), 0, false},
		{"normalised keep_whitespace", "normalised", `{"keep_whitespace":true}`, answers("a b", "a  b"), 0, false},

		{"schema inline valid", "json_schema", `{"schema":{"type":"object","required":["n"]}}`, answers("", `{"n": 1}`), 1, true},
		{"schema inline invalid", "json_schema", `{"schema":{"type":"object","required":["n"]}}`, answers("", `{"m": 1}`), 0, false},
		{"schema not json", "json_schema", `{"schema":{"type":"object"}}`, answers("", `n = 1`), 0, false},
		{"schema two values", "json_schema", `{"schema":{}}`, answers("", `{} {}`), 0, false},
		{"schema file valid", "json_schema", `{"schema_file":"answer.schema.json"}`, answers("", `{"city":"Paris"}`), 1, true},
		{"schema file wrong type", "json_schema", `{"schema_file":"answer.schema.json"}`, answers("", `{"city":7}`), 0, false},

		{"regexp matches", "regexp", `{"pattern":"^\\d+ files?$"}`, answers("", "12 files"), 1, true},
		{"regexp does not", "regexp", `{"pattern":"^\\d+ files?$"}`, answers("", "twelve files"), 0, false},
		{"regexp negate", "regexp", `{"pattern":"(?i)sorry","negate":true}`, answers("", "Here it is"), 1, true},
		{"regexp negate hit", "regexp", `{"pattern":"(?i)sorry","negate":true}`, answers("", "SORRY, no"), 0, false},

		{"contains all", "contains", `{"texts":["a.txt","b.txt"]}`, answers("", "a.txt and b.txt"), 1, true},
		{"contains half", "contains", `{"texts":["a.txt","b.txt"]}`, answers("", "only a.txt"), 0.5, false},
		{"contains half over threshold", "contains", `{"texts":["a.txt","b.txt"],"threshold":0.5}`, answers("", "only a.txt"), 0.5, true},
		{"contains any", "contains", `{"texts":["x","a.txt"],"any":true}`, answers("", "only a.txt"), 1, true},
		{"contains none of any", "contains", `{"texts":["zz","qq"],"any":true}`, answers("", "only a.txt"), 0, false},
		{"contains case", "contains", `{"texts":["README"]}`, answers("", "the readme"), 0, false},
		{"contains ignore_case", "contains", `{"texts":["README"],"ignore_case":true}`, answers("", "the readme"), 1, true},

		{"trajectory same", "trajectory", ``, calls([]string{"ls", `{"path":".","all":true}`}, []string{"ls", `{ "all": true, "path": "." }`}), 1, true},
		{"trajectory same numbers", "trajectory", ``, calls([]string{"f", `{"n":1,"x":[1e2]}`}, []string{"f", `{"n":1.0,"x":[100]}`}), 1, true},
		{"trajectory big integers differ", "trajectory", ``, calls([]string{"f", `{"n":9007199254740993}`}, []string{"f", `{"n":9007199254740992}`}), 0, false},
		{"trajectory broken arguments equal", "trajectory", ``, calls([]string{"f", `{"n":`}, []string{"f", `{"n":`}), 1, true},
		{"trajectory broken vs whole", "trajectory", ``, calls([]string{"f", `{"n":1}`}, []string{"f", `{"n":1}}`}), 0, false},
		{"trajectory no calls", "trajectory", ``, calls(nil, nil), 1, true},
		{"trajectory other args", "trajectory", ``, calls([]string{"ls", `{"path":"."}`}, []string{"ls", `{"path":"/"}`}), 0, false},
		{"trajectory ignore_arguments", "trajectory", `{"ignore_arguments":true}`, calls([]string{"ls", `{"path":"."}`}, []string{"ls", `{"path":"/"}`}), 1, true},
		{"trajectory swapped order", "trajectory", ``, calls([]string{"a", `{}`, "b", `{}`}, []string{"b", `{}`, "a", `{}`}), 0, false},
		{"trajectory prefix", "trajectory", `{"partial":"prefix"}`, calls([]string{"a", `{}`, "b", `{}`, "c", `{}`, "d", `{}`}, []string{"a", `{}`, "x", `{}`, "c", `{}`, "d", `{}`}), 0.25, false},
		{"trajectory lcs", "trajectory", `{"partial":"lcs"}`, calls([]string{"a", `{}`, "b", `{}`, "c", `{}`, "d", `{}`}, []string{"a", `{}`, "x", `{}`, "c", `{}`, "d", `{}`}), 0.75, false},
		{"trajectory lcs extra call", "trajectory", `{"partial":"lcs","threshold":0.6}`, calls([]string{"a", `{}`, "b", `{}`}, []string{"a", `{}`, "z", `{}`, "b", `{}`}), 2.0 / 3, true},
		{"trajectory stopped early", "trajectory", `{"partial":"prefix"}`, calls([]string{"a", `{}`, "b", `{}`}, []string{"a", `{}`}), 0.5, false},

		{"cost cheaper", "cost", ``, spent(0.02, 0.01, 10, 5, 0, 0), 1, true},
		{"cost dearer", "cost", ``, spent(0.01, 0.02, 10, 5, 0, 0), 0.5, false},
		{"cost within ratio", "cost", `{"max_ratio":1.5}`, spent(0.02, 0.03, 10, 5, 0, 0), 1, true},
		{"cost past ratio", "cost", `{"max_ratio":1.5}`, spent(0.02, 0.06, 10, 5, 0, 0), 0.5, false},
		{"cost within delta", "cost", `{"max_delta_usd":0.01}`, spent(0.0, 0.01, 0, 5, 0, 0), 1, true},
		{"cost tokens", "cost", `{"measure":"tokens","max_delta_tokens":5}`, spent(0, 0, 10, 15, 0, 0), 1, true},
		{"cost tokens past", "cost", `{"measure":"tokens"}`, spent(0, 0, 10, 20, 0, 0), 0.5, false},

		{"latency faster", "latency", ``, spent(0, 0, 0, 0, 2*time.Second, time.Second), 1, true},
		{"latency slower", "latency", ``, spent(0, 0, 0, 0, time.Second, 4*time.Second), 0.25, false},
		{"latency ratio", "latency", `{"max_ratio":2}`, spent(0, 0, 0, 0, time.Second, 2*time.Second), 1, true},
		{"latency delta", "latency", `{"max_delta":"500ms"}`, spent(0, 0, 0, 0, time.Second, 1400*time.Millisecond), 1, true},
		{"latency past delta", "latency", `{"max_delta":"1s","threshold":0.5}`, spent(0, 0, 0, 0, time.Second, 4*time.Second), 0.5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := score.New(tt.scorer, score.Env{Dir: dir}, json.RawMessage(tt.config))
			require.NoError(t, err)
			r, err := s.Score(context.Background(), tt.pair)
			require.NoError(t, err)
			assert.InDelta(t, tt.score, r.Score, 1e-9, r.Reason)
			assert.Equal(t, tt.pass, r.Pass, r.Reason)
			assert.NotEmpty(t, r.Reason)
		})
	}
}

func TestCostWithoutPricesIsAnError(t *testing.T) {
	s, err := score.New("cost", score.Env{}, nil)
	require.NoError(t, err)
	_, err = s.Score(context.Background(), spent(0, 0, 10, 12, 0, 0))
	require.ErrorIs(t, err, score.ErrNoPrice)
}

func TestBuiltinConfigsAreStrict(t *testing.T) {
	ask := func(context.Context, string, []string, string) (string, error) { return "", nil }
	tests := []struct {
		name, scorer, config, key string
	}{
		{"exact unknown key", "exact", `{"trim":true}`, "trim"},
		{"threshold out of range", "exact", `{"threshold":1.5}`, "threshold"},
		{"threshold a string", "contains", `{"texts":["a"],"threshold":"high"}`, "threshold"},
		{"normalised form", "normalised", `{"form":"nfd"}`, "form"},
		{"normalised typo", "normalised", `{"keep_cases":true}`, "keep_cases"},
		{"schema neither", "json_schema", `{}`, ""},
		{"schema both", "json_schema", `{"schema":{},"schema_file":"x.json"}`, ""},
		{"schema missing file", "json_schema", `{"schema_file":"nope.json"}`, "schema_file"},
		{"schema not a schema", "json_schema", `{"schema":{"type":12}}`, "schema"},
		{"schema outside ref", "json_schema", `{"schema":{"$ref":"file:///etc/passwd"}}`, "schema"},
		{"regexp missing", "regexp", `{}`, "pattern"},
		{"regexp bad", "regexp", `{"pattern":"(a"}`, "pattern"},
		{"contains missing", "contains", `{}`, "texts"},
		{"contains empty text", "contains", `{"texts":[""]}`, "texts"},
		{"trajectory partial", "trajectory", `{"partial":"some"}`, "partial"},
		{"cost ratio below 1", "cost", `{"max_ratio":0.5}`, "max_ratio"},
		{"cost measure", "cost", `{"measure":"eur"}`, "measure"},
		{"cost delta of other measure", "cost", `{"measure":"tokens","max_delta_usd":1}`, "measure"},
		{"cost negative delta", "cost", `{"max_delta_usd":-1}`, "max_delta_usd"},
		{"latency delta", "latency", `{"max_delta":"soon"}`, "max_delta"},
		{"latency negative delta", "latency", `{"max_delta":"-1s"}`, "max_delta"},
		{"latency delta as number", "latency", `{"max_delta":5}`, "max_delta"},
		{"judge no rubric", "judge", `{}`, "rubric"},
		{"judge format", "judge", `{"rubric":"r","format":"stars"}`, "format"},
		{"judge typo", "judge", `{"rubric":"r","rubrik":"r"}`, "rubrik"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := score.New(tt.scorer, score.Env{Dir: t.TempDir(), Ask: ask}, json.RawMessage(tt.config))
			require.ErrorIs(t, err, score.ErrConfig)
			var ce *score.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.key, ce.Key, err.Error())
			if tt.key != "" {
				assert.Contains(t, err.Error(), tt.key)
			}
		})
	}
}

func TestBuiltinNames(t *testing.T) {
	names := score.Names()
	for _, n := range []string{"exact", "normalised", "json_schema", "regexp", "contains", "trajectory", "cost", "latency", "judge"} {
		assert.Contains(t, names, n)
	}
}
