package score

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil/session"
)

// Turn is what one side of a pair did in one turn: the prompt it was
// given and what it answered, as the log shows it.
type Turn struct {
	// N is the turn's number in its session.
	N int `json:"turn"`
	// Prompt is the turn's user message.
	Prompt string `json:"prompt"`
	// Answer is the text of the turn's last assistant message.
	Answer string `json:"answer"`
	// Calls are the turn's tool calls, in log order.
	Calls []session.ToolCall `json:"calls,omitempty"`
	// Reason is the turn/end's reason ("completed", "max-steps", …).
	Reason string `json:"reason"`
	// Usage is the tokens the turn's steps reported.
	Usage session.Usage `json:"usage"`
	// CostUSD is the turn's cost at the prices the eval knows, 0 when
	// none is known.
	CostUSD float64 `json:"cost_usd"`
	// Latency is the wall time from turn/start to turn/end.
	Latency time.Duration `json:"latency"`
}

// Pair is one recorded turn and the candidate's turn on the same
// prompt, after the same history.
type Pair struct {
	// Session is the recorded session's id; Case is its eval session's.
	Session string `json:"session"`
	// Diverged is the first step at which the candidate's request differs
	// from the recorded one (0: it never did, the candidate replayed the
	// recording).
	Diverged  int  `json:"diverged"`
	Recorded  Turn `json:"recorded"`
	Candidate Turn `json:"candidate"`
}

// Result is a scorer's verdict on one pair.
type Result struct {
	// Score is in [0, 1]; 1 is as good as the recording or better.
	Score float64 `json:"score"`
	// Pass says whether the pair passes this scorer's own bar (its
	// config's threshold, or Score == 1 when it has none).
	Pass bool `json:"pass"`
	// Reason says why, in one sentence, for the table and JUnit.
	Reason string `json:"reason,omitempty"`
}

// Scorer scores pairs. Score must not keep p past the call; an error is
// a scorer that could not score (a judge that got no answer), not a low
// score. Score may be called concurrently. A scorer that holds something
// (an out-of-process scorer's process) is also an io.Closer: the eval
// closes it once the run is done with it.
type Scorer interface {
	Score(ctx context.Context, p Pair) (Result, error)
}

// Env is what the eval run lends a scorer.
type Env struct {
	// Ask sends a model a one-shot request logged in the eval's own
	// session (agentloop.Complete on it), so a judge's every call is
	// provable: the purpose, the records it shows the model (appended to
	// the eval session by Ask before the call) and the instruction. It
	// returns the model's answer. Nil when the suite names no judge model.
	Ask func(ctx context.Context, purpose string, shown []string, instruction string) (string, error)
	// Dir is the folder of the suite file, for relative paths in configs.
	Dir string
	// Log is the eval's logger, for a scorer's own diagnostics (an
	// out-of-process scorer's stderr); nil discards them.
	Log hclog.Logger
}

// Factory makes a scorer from its config (the suite's `config:` mapping
// as JSON; null when there is none), or says why the config is wrong.
type Factory func(env Env, config json.RawMessage) (Scorer, error)
