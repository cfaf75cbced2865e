// Command lengthscorer is an example out-of-process scorer for `vigil
// eval`: it scores a candidate's answer by its length against the
// recorded answer's, 1 when it is no longer than max_ratio times the
// recorded one, less the longer it grows.
//
// Build it and name it in a suite's scorers:
//
//	go build -o bin/lengthscorer ./examples/plugins/lengthscorer
//
//	scorers:
//	  - name: plugin
//	    config: { path: ./bin/lengthscorer, config: { max_ratio: 1.5 } }
package main

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/vigil-run/vigil/plugins/external/sdk"
)

// Config is the scorer's config (the config key of its suite entry).
type Config struct {
	// MaxRatio is how many times the recorded answer's length the
	// candidate's may be and still score 1 (default 1).
	MaxRatio float64 `json:"max_ratio"`
}

func main() {
	maxRatio := 1.0
	sdk.Serve(&sdk.Plugin[Config]{
		Name:    "lengthscorer",
		Version: "1.0.0",
		Configure: func(_ context.Context, _ *sdk.Host, cfg Config) error {
			switch {
			case cfg.MaxRatio == 0:
			case cfg.MaxRatio < 1:
				return errors.New("max_ratio must be 1 or more")
			default:
				maxRatio = cfg.MaxRatio
			}
			return nil
		},
		Score: func(_ context.Context, p sdk.ScorePair) (sdk.ScoreResult, error) {
			return score(p, maxRatio), nil
		},
	})
}

// score compares the answers' lengths in runes.
func score(p sdk.ScorePair, maxRatio float64) sdk.ScoreResult {
	rec, cand := utf8.RuneCountInString(p.Recorded.Answer), utf8.RuneCountInString(p.Candidate.Answer)
	allowed := float64(rec) * maxRatio
	reason := fmt.Sprintf("%d characters, recorded %d, allowed %.0f", cand, rec, allowed)
	if float64(cand) <= allowed {
		return sdk.ScoreResult{Score: 1, Pass: true, Reason: reason}
	}
	return sdk.ScoreResult{Score: allowed / float64(cand), Reason: reason}
}
