package score

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/text/cases"
)

// RegexpConfig is the config of `regexp`: the candidate's answer must
// match an RE2 pattern (Go's regexp syntax), or must not with negate.
type RegexpConfig struct {
	Bar
	Pattern string `json:"pattern"`
	Negate  bool   `json:"negate,omitempty"`
}

func (c *RegexpConfig) check() error {
	if c.Pattern == "" {
		return keyError("pattern", "required")
	}
	return c.Bar.Check()
}

type regexpScorer struct {
	cfg RegexpConfig
	re  *regexp.Regexp
}

func newRegexp(_ Env, raw json.RawMessage) (Scorer, error) {
	var cfg RegexpConfig
	if err := decodeChecked(raw, &cfg); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(cfg.Pattern)
	if err != nil {
		return nil, &ConfigError{Key: "pattern", Err: err}
	}
	return regexpScorer{cfg: cfg, re: re}, nil
}

func (s regexpScorer) Score(_ context.Context, p Pair) (Result, error) {
	m := s.re.MatchString(p.Candidate.Answer)
	if s.cfg.Negate {
		return s.cfg.binary(!m, "the answer does not match /"+s.cfg.Pattern+"/", "the answer matches /"+s.cfg.Pattern+"/"), nil
	}
	return s.cfg.binary(m, "the answer matches /"+s.cfg.Pattern+"/", "the answer does not match /"+s.cfg.Pattern+"/"), nil
}

// ContainsConfig is the config of `contains`: the candidate's answer
// must hold every one of texts (the score is the share it holds), or
// with any, one of them (the score is 1 or 0).
type ContainsConfig struct {
	Bar
	Texts []string `json:"texts"`
	Any   bool     `json:"any,omitempty"`
	// IgnoreCase compares Unicode case-folded text.
	IgnoreCase bool `json:"ignore_case,omitempty"`
}

func (c *ContainsConfig) check() error {
	if len(c.Texts) == 0 {
		return keyError("texts", "at least one text is required")
	}
	for i, t := range c.Texts {
		if t == "" {
			return keyError("texts", "text %d is empty, which every answer contains", i)
		}
	}
	return c.Bar.Check()
}

type contains struct{ cfg ContainsConfig }

func newContains(_ Env, raw json.RawMessage) (Scorer, error) {
	var cfg ContainsConfig
	if err := decodeChecked(raw, &cfg); err != nil {
		return nil, err
	}
	return contains{cfg}, nil
}

func (s contains) Score(_ context.Context, p Pair) (Result, error) {
	fold := func(x string) string {
		if s.cfg.IgnoreCase {
			return cases.Fold().String(x)
		}
		return x
	}
	answer := fold(p.Candidate.Answer)
	var missing []string
	for _, t := range s.cfg.Texts {
		if !strings.Contains(answer, fold(t)) {
			missing = append(missing, t)
		}
	}
	found := len(s.cfg.Texts) - len(missing)
	switch {
	case s.cfg.Any:
		return s.cfg.binary(found > 0, "the answer holds one of the texts", "the answer holds none of the texts"), nil
	case len(missing) == 0:
		return s.cfg.Result(1, "the answer holds every text"), nil
	}
	return s.cfg.Result(float64(found)/float64(len(s.cfg.Texts)),
		fmt.Sprintf("the answer lacks %d of %d texts, first %s", len(missing), len(s.cfg.Texts), excerpt(missing[0]))), nil
}
