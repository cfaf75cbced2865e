package eval

import (
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/eval/score"
	"github.com/vigil-run/vigil/session"
)

// The plugin-owned, ignorable records of an eval session
// (docs/log-format.md, "Eval sessions").
const (
	// TypeRun opens an eval session: the suite run ([RunInfo]).
	TypeRun = "eval/run"
	// TypeScore is one scorer's verdict on one pair ([ScoreData]).
	TypeScore = "eval/score"
	// TypeCase closes one recorded session's evaluation ([CaseData]),
	// citing its eval/score records: a session with an eval/case is done,
	// and a resumed run does not ask it again.
	TypeCase = "eval/case"
	// TypeEnd closes the run with its summary ([Summary]).
	TypeEnd = "eval/end"
)

// By is the creator an eval names on the sessions it writes (the eval
// session, the candidates' runs), so a corpus query leaves them out.
const By = "vigil eval"

// RunInfo is the data of eval/run.
type RunInfo struct {
	Suite  string `json:"suite"`
	Digest string `json:"digest"`
	// Candidate is the candidate's plugins.yaml.
	Candidate string   `json:"candidate"`
	Scorers   []string `json:"scorers"`
	// Sessions are the corpus, resolved, in the order they are run.
	Sessions []Source `json:"sessions"`
}

// ScoreData is the data of eval/score.
type ScoreData struct {
	Session string `json:"session"`
	Turn    int    `json:"turn"`
	Scorer  string `json:"scorer"`
	score.Result
	// Error is why the scorer could not score (Score is then 0).
	Error string `json:"error,omitempty"`
}

// CaseData is the data of eval/case.
type CaseData struct {
	// Session is the recorded session; Log the file it was read from
	// ("" for the store).
	Session string `json:"session"`
	Log     string `json:"log,omitempty"`
	// Candidate is the session of the store the candidate ran on.
	Candidate string `json:"candidate,omitempty"`
	// Diverged is the first diverging step (turn, step; nil: none), with
	// the field that differed.
	Diverged *Diverged `json:"diverged,omitempty"`
	// Pairs are the pairs scored, without their texts (the logs hold
	// them).
	Pairs []PairInfo `json:"pairs"`
	// Live counts the candidate's live requests.
	Live int `json:"live"`
	// Error is why the session could not be run through the candidate.
	Error string `json:"error,omitempty"`
}

// Diverged is where a candidate first diverged from a recording.
type Diverged struct {
	Turn  int    `json:"turn"`
	Step  int    `json:"step"`
	Field string `json:"field"`
}

// PairInfo is a pair of a case, as eval/case lists it.
type PairInfo struct {
	Turn      int    `json:"turn"`
	Recorded  string `json:"recorded"`
	Candidate string `json:"candidate"`
}

// Case is an eval/case with the scores it cites.
type Case struct {
	CaseData
	Scores []ScoreData `json:"scores"`
}

// Logged is an eval session read back: what ran, the finished cases in the
// order they finished, and the summary when the run ended.
type Logged struct {
	ID      string   `json:"id"`
	Info    RunInfo  `json:"run"`
	Cases   []Case   `json:"cases"`
	Summary *Summary `json:"summary,omitempty"`
}

// ErrNotEval is the error of a log that is not an eval session.
var ErrNotEval = errors.New("eval: not an eval session (no eval/run record)")

// ReadRun reads an eval session's records. Scores no eval/case cites
// (a session the run was killed in) are left out.
func ReadRun(id string, records []session.Record) (*Logged, error) {
	run := &Logged{ID: id}
	seen := false
	for _, r := range records {
		switch r.Type() {
		case TypeRun:
			info, err := session.DecodeData[RunInfo](r)
			if err != nil {
				return nil, fmt.Errorf("eval: %s: seq %d: %w", id, r.Seq(), err)
			}
			run.Info, seen = info, true
		case TypeCase:
			c, err := session.DecodeData[CaseData](r)
			if err != nil {
				return nil, fmt.Errorf("eval: %s: seq %d: %w", id, r.Seq(), err)
			}
			k := Case{CaseData: c, Scores: []ScoreData{}}
			for _, s := range r.Sources() {
				if s < 0 || s >= int64(len(records)) || records[s].Type() != TypeScore {
					return nil, fmt.Errorf("eval: %s: seq %d cites %d, not an eval/score", id, r.Seq(), s)
				}
				d, err := session.DecodeData[ScoreData](records[s])
				if err != nil {
					return nil, fmt.Errorf("eval: %s: seq %d: %w", id, s, err)
				}
				k.Scores = append(k.Scores, d)
			}
			run.Cases = append(run.Cases, k)
		case TypeEnd:
			sum, err := session.DecodeData[Summary](r)
			if err != nil {
				return nil, fmt.Errorf("eval: %s: seq %d: %w", id, r.Seq(), err)
			}
			run.Summary = &sum
		}
	}
	if !seen {
		return nil, fmt.Errorf("%w: %s", ErrNotEval, id)
	}
	return run, nil
}

// Done reports whether the run finished the recorded session id.
func (r *Logged) Done(id string) bool {
	for _, c := range r.Cases {
		if c.Session == id {
			return true
		}
	}
	return false
}
