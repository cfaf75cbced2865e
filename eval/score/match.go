package score

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// ExactConfig is the config of `exact`: the candidate's answer must be
// the recorded answer, byte for byte.
type ExactConfig struct {
	Bar
}

type exact struct{ cfg ExactConfig }

func newExact(_ Env, raw json.RawMessage) (Scorer, error) {
	var cfg ExactConfig
	if err := decodeChecked(raw, &cfg); err != nil {
		return nil, err
	}
	return exact{cfg}, nil
}

func (c *ExactConfig) check() error { return c.Bar.Check() }

func (s exact) Score(_ context.Context, p Pair) (Result, error) {
	return s.cfg.binary(p.Candidate.Answer == p.Recorded.Answer,
		"the answer is the recorded one",
		"the answer "+excerpt(p.Candidate.Answer)+" differs from the recorded "+excerpt(p.Recorded.Answer)), nil
}

// NormalisedConfig is the config of `normalised`: the answers must be
// equal once both are normalised. By default every normalisation
// applies; each keep_ key turns one off.
type NormalisedConfig struct {
	Bar
	// Form is the Unicode normalisation form: "nfkc" (the default: "ﬁ"
	// and "fi", full- and half-width alike), "nfc", or "none".
	Form string `json:"form,omitempty"`
	// KeepCase compares letters' case (off: Unicode case folding, so "ß"
	// and "SS" match).
	KeepCase bool `json:"keep_case,omitempty"`
	// KeepPunctuation compares punctuation (off: Unicode punctuation is
	// dropped).
	KeepPunctuation bool `json:"keep_punctuation,omitempty"`
	// KeepWhitespace compares whitespace (off: runs of Unicode spaces are
	// one space, none at either end).
	KeepWhitespace bool `json:"keep_whitespace,omitempty"`
}

func (c *NormalisedConfig) check() error {
	switch c.Form {
	case "":
		c.Form = "nfkc"
	case "nfkc", "nfc", "none":
	default:
		return keyError("form", "%q is not nfkc, nfc or none", c.Form)
	}
	return c.Bar.Check()
}

type normalised struct{ cfg NormalisedConfig }

func newNormalised(_ Env, raw json.RawMessage) (Scorer, error) {
	var cfg NormalisedConfig
	if err := decodeChecked(raw, &cfg); err != nil {
		return nil, err
	}
	return normalised{cfg}, nil
}

func (s normalised) Score(_ context.Context, p Pair) (Result, error) {
	a, b := s.cfg.normalise(p.Candidate.Answer), s.cfg.normalise(p.Recorded.Answer)
	return s.cfg.binary(a == b,
		"the answer is the recorded one, normalised",
		"the answer, normalised, "+excerpt(a)+" differs from the recorded "+excerpt(b)), nil
}

// normalise applies the config's normalisations to s.
func (c NormalisedConfig) normalise(s string) string {
	form := func(s string) string {
		switch c.Form {
		case "nfkc":
			return norm.NFKC.String(s)
		case "nfc":
			return norm.NFC.String(s)
		}
		return s
	}
	s = form(s)
	if !c.KeepCase {
		// A Caser keeps state: one per call. Folding can undo a
		// normal form ("ǰ" folds to two runes), so normalise again.
		s = form(cases.Fold().String(s))
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case !c.KeepPunctuation && unicode.IsPunct(r):
			continue
		case !c.KeepWhitespace && unicode.IsSpace(r):
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
