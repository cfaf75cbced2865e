// Command unruly is a scorer plugin for eval/score's tests: what the
// candidate answered says what it does — answer as asked, crash in the
// middle of the call, hang, fail, panic, or score out of range. With the
// argument -not-a-scorer it serves no Score hook.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/vigil-run/vigil/plugins/external/sdk"
)

// Config is strict: an unknown key fails Configure.
type Config struct {
	Bonus float64 `json:"bonus"`
}

func main() {
	var bonus float64
	p := &sdk.Plugin[Config]{
		Name: "unruly",
		Configure: func(_ context.Context, _ *sdk.Host, cfg Config) error {
			if cfg.Bonus < 0 {
				return errors.New("bonus must not be negative")
			}
			bonus = cfg.Bonus
			return nil
		},
		Score: func(ctx context.Context, p sdk.ScorePair) (sdk.ScoreResult, error) {
			switch p.Candidate.Answer {
			case "crash":
				os.Exit(3)
			case "hang":
				<-ctx.Done()
				select {} // still no answer: the host's timeout must end the call
			case "fail":
				return sdk.ScoreResult{}, errors.New("cannot score this")
			case "panic":
				panic("scorer bug")
			case "pid":
				return sdk.ScoreResult{Score: 0.5, Reason: strconv.Itoa(os.Getpid())}, nil
			case "out of range":
				return sdk.ScoreResult{Score: 2}, nil
			case "echo":
				r, c := p.Recorded, p.Candidate
				return sdk.ScoreResult{Score: 0.5, Reason: fmt.Sprintf("%s d=%d n=%d/%d calls=%s:%s reason=%s tokens=%d+%d cost=%.3f latency=%s bonus=%v",
					p.Session, p.Diverged, r.N, c.N, r.Calls[0].Name, r.Calls[0].Arguments, c.Reason, c.Usage.Input, c.Usage.Output, c.CostUSD, c.Latency, bonus)}, nil
			}
			if p.Candidate.Answer == p.Recorded.Answer {
				return sdk.ScoreResult{Score: 1, Pass: true, Reason: "same"}, nil
			}
			return sdk.ScoreResult{Score: min(1, bonus), Reason: "differs"}, nil
		},
	}
	if len(os.Args) > 1 && os.Args[1] == "-not-a-scorer" {
		p.Score = nil
	}
	sdk.Serve(p)
}
