package eval

import (
	"time"

	"github.com/vigil-run/vigil/eval/score"
	"github.com/vigil-run/vigil/plugins/budget"
	"github.com/vigil-run/vigil/session"
)

// Turns reads the turns of a log as scorers see them, in order: each
// turn's prompt, last assistant text, tool calls, how it ended, usage
// and cost (at prices; nil: none) and wall time. A continuation turn has
// no prompt of its own; a turn that never ended has Reason "".
func Turns(records []session.Record, prices map[string]budget.Price) []score.Turn {
	var out []score.Turn
	at := map[int]int{}
	started := map[int]time.Time{}
	for _, r := range records {
		n := r.Turn()
		if n == 0 {
			continue
		}
		i, ok := at[n]
		if !ok {
			if r.Type() != session.TypeTurnStart {
				continue
			}
			i = len(out)
			at[n] = i
			out = append(out, score.Turn{N: n})
		}
		t := &out[i]
		switch r.Type() {
		case session.TypeTurnStart:
			started[n] = r.Time()
		case session.TypeUserMessage:
			if m, err := session.DecodeData[session.UserMessage](r); err == nil && m.Origin == "" && t.Prompt == "" {
				t.Prompt = m.Content
			}
		case session.TypeAssistantMessage:
			if m, err := session.DecodeData[session.AssistantMessage](r); err == nil {
				t.Answer = m.Content
				t.Calls = append(t.Calls, m.ToolCalls...)
			}
		case session.TypeTurnEnd:
			if e, err := session.DecodeData[session.TurnEnd](r); err == nil {
				t.Reason = e.Reason
				t.Latency = r.Time().Sub(started[n])
			}
		}
	}
	acc := budget.Tally(records, prices)
	for _, ts := range acc.Turns {
		if i, ok := at[ts.Turn]; ok {
			out[i].Usage = session.Usage{Input: ts.Input, Output: ts.Output}
			if ts.Cost != nil {
				out[i].CostUSD = *ts.Cost
			}
		}
	}
	return out
}
