package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/eval/score"
	"github.com/vigil-run/vigil/plugins/budget"
)

// Suite is a suite file, as `vigil eval SUITE` reads it.
type Suite struct {
	// Corpus is the sessions scored.
	Corpus Corpus `yaml:"corpus" vigil:"required" doc:"the recorded sessions to score"`
	// Candidate is the plugins.yaml of the composition evaluated.
	Candidate string       `yaml:"candidate" vigil:"required,path" doc:"the plugins.yaml of the composition evaluated"`
	Scorers   []ScorerSpec `yaml:"scorers" vigil:"required" doc:"the scorers, each scoring every pair"`
	// Thresholds are the bars of the run as a whole: missed, the command
	// exits 1.
	Thresholds Thresholds `yaml:"thresholds" doc:"the bars the run must meet"`
	Budget     Budget     `yaml:"budget" doc:"bounds on the live calls of the run"`
	// Concurrency is how many sessions run at once (default 1).
	Concurrency int `yaml:"concurrency" doc:"sessions evaluated at once (default 1)"`
	// Unanswered says what a call after the divergence gets that the
	// recording cannot answer (no recorded call of the same tool with the
	// same arguments): refused (an error result), or run for real.
	Unanswered string `yaml:"unanswered_calls" enum:"refuse,live" doc:"a tool call the recording cannot answer: refuse (default) or live"`
	// Judge is the model Env.Ask reaches (none: scorers that need one
	// are refused).
	Judge *Judge `yaml:"judge" doc:"the model an LLM-judge scorer asks"`
	// Prices price the turns' usage (model → USD per million tokens);
	// default: the candidate's budget entry's.
	Prices map[string]budget.Price `yaml:"prices" doc:"USD per million tokens by model, for cost scores and the cost budget"`

	// Path is the file's path. Digest is the SHA-256 of what the suite
	// asks (corpus, candidate, scorers, unanswered calls, judge, prices;
	// not its bars, budget or concurrency): a stopped run resumes under a
	// suite of the same digest, with a larger budget say.
	Path   string `yaml:"-"`
	Digest string `yaml:"-"`
	// Dir is the suite file's absolute directory.
	Dir string `yaml:"-"`
}

// Corpus names the recorded sessions: ids in the store, files and
// directories of JSONL logs, and a query over the store. Their union is
// scored, each session once.
type Corpus struct {
	Sessions []string `yaml:"sessions" doc:"session ids in the configured store"`
	Files    []string `yaml:"files" vigil:"path" doc:"JSONL session logs, or directories of them"`
	Query    *Query   `yaml:"query" doc:"sessions of the configured store that match"`
	pos
}

// pos is where a mapping of the suite was written.
type pos struct{ line, col int }

// SetPosition remembers where the mapping was written, for the checks
// of the whole suite.
func (p *pos) SetPosition(line, col int) { p.line, p.col = line, col }

// Query selects stored sessions by tenant and creation time. Sessions
// an eval wrote (the eval sessions and the candidates' runs), forks and
// sub-agents' child sessions are never selected.
type Query struct {
	Tenant string `yaml:"tenant" doc:"the tenant (default: any)"`
	// Since and Until bound the creation time: since ≤ created < until.
	Since Time `yaml:"since" doc:"created at or after (RFC 3339 or YYYY-MM-DD)"`
	Until Time `yaml:"until" doc:"created before (RFC 3339 or YYYY-MM-DD)"`
	// Limit keeps the first sessions by id (0: all).
	Limit int `yaml:"limit" doc:"at most this many sessions, oldest first (0: all)"`
}

// Time is a point in time written as RFC 3339 or a date (midnight UTC).
type Time struct{ time.Time }

// UnmarshalText reads RFC 3339 or YYYY-MM-DD.
func (t *Time) UnmarshalText(b []byte) error {
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if v, err := time.Parse(layout, string(b)); err == nil {
			t.Time = v
			return nil
		}
	}
	return fmt.Errorf("cannot use %q as a time (like 2026-11-01 or 2026-11-01T09:00:00Z)", string(b))
}

// ScorerSpec is one scorer of the suite.
type ScorerSpec struct {
	// Name is a registered scorer's (score.Names).
	Name string `yaml:"name" vigil:"required" doc:"a scorer's name"`
	// ID names it in results (default: Name); two scorers of one name
	// need two ids.
	ID     string `yaml:"id" doc:"the name in results (default: name)"`
	Config any    `yaml:"config" doc:"the scorer's config"`
	// Threshold is the lowest mean score of this scorer the run passes
	// with (default: thresholds.mean).
	Threshold *float64 `yaml:"threshold" doc:"the lowest mean score the run passes with"`
	pos
}

// Key is the scorer's name in results.
func (s *ScorerSpec) Key() string {
	if s.ID != "" {
		return s.ID
	}
	return s.Name
}

// Thresholds are the run's bars, per scorer.
type Thresholds struct {
	// Mean is the lowest mean score a scorer without its own threshold
	// passes with (nil: none).
	Mean *float64 `yaml:"mean" doc:"the lowest mean score of each scorer (default: none)"`
	// PassRate is the lowest share of pairs each scorer must pass.
	PassRate *float64 `yaml:"pass_rate" doc:"the lowest share of pairs each scorer passes (default: none)"`
	// Errors is how many sessions may fail to run (default 0).
	Errors int `yaml:"errors" doc:"sessions that may fail to run (default 0)"`
	pos
}

// Budget bounds the run's live calls: the candidate's requests from the
// divergence on and the judge's. Zero is no bound. A session whose
// live call the budget refuses ends with an error.
type Budget struct {
	Calls  int     `yaml:"calls" doc:"live model requests (0: no bound)"`
	Tokens int     `yaml:"tokens" doc:"input plus output tokens of the live requests (0: no bound)"`
	Cost   float64 `yaml:"cost" doc:"USD of the live requests, at prices (0: no bound)"`
	pos
}

// Judge is the model a scorer asks through Env.Ask.
type Judge struct {
	// Plugins is the composition whose provider judges (default: the
	// candidate's).
	Plugins string `yaml:"plugins" vigil:"path" doc:"the plugins.yaml whose provider judges (default: the candidate's)"`
	Model   string `yaml:"model" doc:"the model asked (default: the provider's)"`
}

// LoadSuite reads and checks the suite file at path: the file's
// structure, the scorer names (score.Names) and configs, the bounds; all
// mistakes at once, each at its file:line:col. A scorer's config is
// checked by making it (score.Check) with an Env whose Ask is never called.
func LoadSuite(path string) (*Suite, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	var s Suite
	derr := config.DecodeFile(path, &s)
	var ce *config.Error
	var ces config.Errors
	if derr != nil && !errors.As(derr, &ce) && !errors.As(derr, &ces) {
		return nil, derr
	}
	s.Path = path
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	s.Dir = dir
	if err := config.Join(derr, config.Join(s.check()...)); err != nil {
		return nil, err
	}
	if s.Concurrency == 0 {
		s.Concurrency = 1
	}
	if s.Unanswered == "" {
		s.Unanswered = "refuse"
	}
	s.Digest = s.digest()
	return &s, nil
}

// digest is the SHA-256 of what the suite asks.
func (s *Suite) digest() string {
	asked := struct {
		Corpus     Corpus
		Candidate  string
		Scorers    []ScorerSpec
		Unanswered string
		Judge      *Judge
		Prices     map[string]budget.Price
	}{s.Corpus, s.Candidate, s.Scorers, s.Unanswered, s.Judge, s.Prices}
	b, err := json.Marshal(asked)
	if err != nil {
		b = []byte(err.Error()) // a config JSON cannot hold: never matches
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// check finds the mistakes the decoder cannot see.
func (s *Suite) check() []error {
	var errs []error
	at := func(line, col int, format string, args ...any) {
		errs = append(errs, &config.Error{File: s.Path, Line: line, Col: col, Msg: fmt.Sprintf(format, args...), Err: config.ErrInvalid})
	}
	keys := map[string]bool{}
	names := score.Names()
	for i := range s.Scorers {
		sc := &s.Scorers[i]
		if sc.Name == "" {
			continue // the decoder said it is missing
		}
		if keys[sc.Key()] {
			at(sc.line, sc.col, "scorer %q given twice: give one an id", sc.Key())
		}
		keys[sc.Key()] = true
		if sc.Threshold != nil && !unit(*sc.Threshold) {
			at(sc.line, sc.col, "%s: threshold must be between 0 and 1, not %v", sc.Key(), *sc.Threshold)
		}
		raw, err := json.Marshal(sc.Config)
		if err != nil {
			at(sc.line, sc.col, "%s: config: %v", sc.Key(), err)
			continue
		}
		if !known(names, sc.Name) {
			at(sc.line, sc.col, "unknown scorer %q%s; known: %s", sc.Name, config.Suggest(sc.Name, names), strings.Join(names, ", "))
			continue
		}
		env := score.Env{Dir: s.Dir}
		if s.Judge != nil {
			env.Ask = checkOnly
		}
		if err := score.Check(sc.Name, env, raw); err != nil {
			at(sc.line, sc.col, "%s: %v", sc.Key(), err)
		}
	}
	th := s.Thresholds.pos
	for _, v := range []*float64{s.Thresholds.Mean, s.Thresholds.PassRate} {
		if v != nil && !unit(*v) {
			at(th.line, th.col, "thresholds: mean and pass_rate must be between 0 and 1, not %v", *v)
		}
	}
	if s.Thresholds.Errors < 0 {
		at(th.line, th.col, "thresholds: errors must not be negative")
	}
	if b := s.Budget; b.Calls < 0 || b.Tokens < 0 || b.Cost < 0 || math.IsNaN(b.Cost) {
		at(b.line, b.col, "budget: calls, tokens and cost must not be negative")
	}
	if s.Concurrency < 0 {
		at(1, 1, "concurrency must not be negative")
	}
	if len(s.Corpus.Sessions)+len(s.Corpus.Files) == 0 && s.Corpus.Query == nil && s.Corpus.line > 0 {
		at(s.Corpus.line, s.Corpus.col, "corpus: name sessions, files or a query")
	}
	return errs
}

// checkOnly is the Ask of the scorers made to check their configs: it
// is never called.
func checkOnly(context.Context, string, []string, string) (string, error) {
	return "", errors.New("eval: the suite is being checked, not run")
}

func unit(v float64) bool { return v >= 0 && v <= 1 && !math.IsNaN(v) }

func known(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}
