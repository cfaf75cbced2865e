package eval

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// CodeNotRecorded is the error code of a tool call after the divergence
// that the recording cannot answer, refused (unanswered_calls: refuse).
const CodeNotRecorded = "EVAL_NOT_RECORDED"

// recordedCalls answers the calls a candidate makes after its divergence
// from the recording: a call of the same tool with the same arguments
// (compared as JSON) as a recorded one gets the recorded results of such
// calls in order, the last again once they run out.
type recordedCalls struct {
	mu   sync.Mutex
	outs map[string][]agentloop.ToolOutput
	used map[string]int
}

func newRecordedCalls(records []session.Record) *recordedCalls {
	calls := map[string]string{} // call id → key
	var order []string
	for _, r := range records {
		switch r.Type() {
		case session.TypeAssistantMessage:
			m, err := session.DecodeData[session.AssistantMessage](r)
			if err != nil {
				continue
			}
			for _, c := range m.ToolCalls {
				calls[c.ID] = callKey(c)
				order = append(order, c.ID)
			}
		}
	}
	res := map[string]session.ToolResult{}
	for _, r := range records {
		if r.Type() != session.TypeToolResult {
			continue
		}
		if t, err := session.DecodeData[session.ToolResult](r); err == nil {
			res[t.ID] = t
		}
	}
	rc := &recordedCalls{outs: map[string][]agentloop.ToolOutput{}, used: map[string]int{}}
	for _, id := range order {
		t, ok := res[id]
		if !ok {
			continue
		}
		k := calls[id]
		rc.outs[k] = append(rc.outs[k], agentloop.ToolOutput{Content: t.Content, Error: t.Error})
	}
	return rc
}

// answer returns the recorded output of a call like c, if any.
func (rc *recordedCalls) answer(c session.ToolCall) (agentloop.ToolOutput, bool) {
	k := callKey(c)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	outs := rc.outs[k]
	if len(outs) == 0 {
		return agentloop.ToolOutput{}, false
	}
	i := min(rc.used[k], len(outs)-1)
	rc.used[k]++
	return outs[i], true
}

// callKey is a call's tool and arguments, the arguments as compact JSON
// with sorted keys when they are JSON, else as written.
func callKey(c session.ToolCall) string {
	args := c.Arguments
	var v any
	if json.Unmarshal([]byte(args), &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			args = string(b)
		}
	}
	return c.Name + "\x00" + args
}

// listenTools answers sess's tool calls that reach it (the rerun answers
// those before the divergence) from the recording, else refuses them or,
// with live, lets the candidate's tools run. Mount it before the rerun
// prepends its own handler.
func listenTools(c *bus.Context, sess string, rc *recordedCalls, live bool) func() {
	return agentloop.ToolExecute.On(c, func(ctx context.Context, inv *agentloop.ToolInvocation, next bus.Next[*agentloop.ToolInvocation, agentloop.ToolOutput]) (agentloop.ToolOutput, error) {
		if inv.Session != sess {
			return next(ctx, inv)
		}
		if out, ok := rc.answer(inv.Call); ok {
			return out, nil
		}
		if live {
			return next(ctx, inv)
		}
		return agentloop.ToolOutput{Error: &session.ToolResultError{Code: CodeNotRecorded,
			Message: "the recording has no call of " + inv.Call.Name + " with these arguments, and the eval refuses calls it cannot answer"}}, nil
	}, bus.Prepend)
}
