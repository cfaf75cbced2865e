package score_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/eval/score"
)

// constScorer gives every pair the same score.
type constScorer struct{ v float64 }

func (s constScorer) Score(context.Context, score.Pair) (score.Result, error) {
	return score.Result{Score: s.v, Pass: s.v == 1}, nil
}

func init() {
	score.Register("test-const", func(_ score.Env, raw json.RawMessage) (score.Scorer, error) {
		var cfg struct {
			Value float64 `json:"value"`
		}
		if err := score.DecodeConfig(raw, &cfg); err != nil {
			return nil, err
		}
		return constScorer{cfg.Value}, nil
	})
}

func TestNewUnknownNameNamesTheKnownOnes(t *testing.T) {
	_, err := score.New("exakt", score.Env{}, nil)
	require.ErrorIs(t, err, score.ErrUnknownScorer)
	assert.Contains(t, err.Error(), `"exakt"`)
	for _, n := range score.Names() {
		assert.Contains(t, err.Error(), n)
	}
	assert.Contains(t, score.Names(), "test-const")
}

func TestNewBuildsFromConfig(t *testing.T) {
	s, err := score.New("test-const", score.Env{}, json.RawMessage(`{"value": 0.5}`))
	require.NoError(t, err)
	r, err := s.Score(context.Background(), score.Pair{})
	require.NoError(t, err)
	assert.Equal(t, 0.5, r.Score)

	_, err = score.New("test-const", score.Env{}, json.RawMessage(`{"valu": 0.5}`))
	require.ErrorIs(t, err, score.ErrConfig)
	var ce *score.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "valu", ce.Key)
	assert.Contains(t, err.Error(), "scorer test-const")
}

func TestRegisterRefusesAClash(t *testing.T) {
	f := func(score.Env, json.RawMessage) (score.Scorer, error) { return constScorer{}, nil }
	assert.Panics(t, func() { score.Register("test-const", f) })
	assert.Panics(t, func() { score.Register("", f) })
	assert.Panics(t, func() { score.Register("test-nil", nil) })
}

func TestDecodeConfig(t *testing.T) {
	type cfg struct {
		MaxRatio float64 `json:"max_ratio"`
		Nested   struct {
			Flag bool `json:"flag"`
		} `json:"nested"`
	}
	tests := []struct {
		name, raw, key string
		ok             bool
	}{
		{name: "empty", raw: ``, ok: true},
		{name: "null", raw: `null`, ok: true},
		{name: "fine", raw: `{"max_ratio": 1.5, "nested": {"flag": true}}`, ok: true},
		{name: "unknown key", raw: `{"max_ratoi": 1}`, key: "max_ratoi"},
		{name: "unknown nested key", raw: `{"nested": {"flg": true}}`, key: "flg"},
		{name: "wrong type", raw: `{"max_ratio": "2"}`, key: "max_ratio"},
		{name: "wrong nested type", raw: `{"nested": {"flag": 1}}`, key: "nested.flag"},
		{name: "not a mapping", raw: `[1]`},
		{name: "two values", raw: `{} {}`},
		{name: "garbage", raw: `{"max_ratio": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c cfg
			err := score.DecodeConfig(json.RawMessage(tt.raw), &c)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, score.ErrConfig)
			var ce *score.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.key, ce.Key)
		})
	}
}
