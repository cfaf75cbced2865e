package eval

import (
	"fmt"
	"math"
	"slices"
)

// Summary is a run's result per scorer, and the bars it missed.
type Summary struct {
	Sessions int `json:"sessions"`
	// Errors counts the sessions that could not be run.
	Errors  int            `json:"errors"`
	Pairs   int            `json:"pairs"`
	Scorers []ScorerResult `json:"scorers"`
	// Missed says each bar the run missed, one sentence each; empty: it
	// passed.
	Missed []string `json:"missed,omitempty"`
}

// ScorerResult is one scorer over the run.
type ScorerResult struct {
	Scorer string  `json:"scorer"`
	Mean   float64 `json:"mean"`
	// PassRate is the share of pairs the scorer passed.
	PassRate float64 `json:"pass_rate"`
	Pairs    int     `json:"pairs"`
	Passed   int     `json:"passed"`
	// Errors counts the pairs it could not score (scored 0, failed).
	Errors int `json:"errors"`
	// Threshold is the lowest mean it had to reach (nil: none).
	Threshold *float64 `json:"threshold,omitempty"`
}

// Summarize adds the cases up per scorer, in the suite's order, and
// checks the suite's bars.
func Summarize(s *Suite, cases []Case) Summary {
	sum := Summary{Sessions: len(cases)}
	by := map[string]*ScorerResult{}
	for _, sc := range s.Scorers {
		r := &ScorerResult{Scorer: sc.Key(), Threshold: sc.Threshold}
		if r.Threshold == nil {
			r.Threshold = s.Thresholds.Mean
		}
		by[sc.Key()] = r
	}
	for _, c := range cases {
		if c.Error != "" {
			sum.Errors++
		}
		sum.Pairs += len(c.Pairs)
		for _, d := range c.Scores {
			r := by[d.Scorer]
			if r == nil {
				continue // a scorer the suite no longer names
			}
			r.Pairs++
			r.Mean += d.Score
			if d.Pass {
				r.Passed++
			}
			if d.Error != "" {
				r.Errors++
			}
		}
	}
	for _, sc := range s.Scorers {
		r := by[sc.Key()]
		if r.Pairs > 0 {
			r.Mean = round(r.Mean / float64(r.Pairs))
			r.PassRate = round(float64(r.Passed) / float64(r.Pairs))
		}
		if r.Threshold != nil && (r.Pairs == 0 || r.Mean < *r.Threshold) {
			sum.Missed = append(sum.Missed, fmt.Sprintf("%s: mean %.3f is below %g", r.Scorer, r.Mean, *r.Threshold))
		}
		if pr := s.Thresholds.PassRate; pr != nil && (r.Pairs == 0 || r.PassRate < *pr) {
			sum.Missed = append(sum.Missed, fmt.Sprintf("%s: pass rate %.3f is below %g", r.Scorer, r.PassRate, *pr))
		}
		sum.Scorers = append(sum.Scorers, *r)
	}
	if sum.Errors > s.Thresholds.Errors {
		sum.Missed = append(sum.Missed, fmt.Sprintf("%d sessions could not be run (at most %d may)", sum.Errors, s.Thresholds.Errors))
	}
	slices.Sort(sum.Missed)
	return sum
}

// round keeps 6 decimals: means print and compare as written.
func round(v float64) float64 { return math.Round(v*1e6) / 1e6 }
