package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Error codes of tool results the loop produces itself: a tool/result's
// error code in the log (docs/log-format.md lists them), for readers of
// logs and for tool/execute listeners that branch on an outcome.
const (
	// CodeUnknownTool: the model called a tool that is not offered.
	CodeUnknownTool = "UNKNOWN_TOOL"
	// CodeInvalidArguments: the call's arguments are not a JSON object.
	CodeInvalidArguments = "INVALID_ARGUMENTS"
	// CodeToolFailed: the tool returned an error without a code, or a
	// tool/execute listener failed.
	CodeToolFailed = "TOOL_ERROR"
	// CodeToolPanic: the tool panicked.
	CodeToolPanic = "TOOL_PANIC"
	// CodeToolAbandoned: the turn was cancelled and the tool did not
	// return within Config.ToolGrace; it was left running and its outcome
	// is unknown.
	CodeToolAbandoned = "TOOL_ABANDONED"
	// CodeSubagentFailed (subagent.go): a sub-agent's turn did not complete.
)

// ToolInvocation is the payload of tool/execute: one call of one step.
type ToolInvocation struct {
	Session    string
	Turn, Step int
	Call       session.ToolCall
	// CallSeq is the seq of the call's tool/call record.
	CallSeq int64
	// decided is the decision a resumed call runs under (subagent.go).
	decided *session.ApprovalDecision
	// Tool is the tool the call names, nil when no such tool is offered.
	Tool Tool
	// Key is the call's idempotency key, session.IdempotencyKey of the
	// session and the call's id: the same on every run of the call (a
	// continuation, a resumed step; a retry of a call a fork inherited
	// has the key of the session the call ran in, see
	// live.Session.Origin). The loop sets it before tool/execute runs.
	// Tools read it with [IdempotencyKey].
	Key string
	// Retry says a continuation runs the call again to learn an outcome
	// a crash left unknown (a tool/retry was logged, and made durable,
	// before it runs): Turn is the continuation's and Step 0; Call,
	// CallSeq and Key are the call's own. A listener that answers calls
	// from a recording (a replay) answers a retry with the outcome the
	// recording's tool/reconcile of that turn logged.
	Retry bool
}

// Subject implements bus.Subjecter: tool calls are dispatched about their
// session.
func (t *ToolInvocation) Subject() any { return t.Session }

// ToolOutput is what a tool call produced: the content the model sees, or
// an error.
type ToolOutput struct {
	Content string
	Error   *session.ToolResultError
	// Child names the sub-agent's session of a delegation (logged as the
	// tool/result's child).
	Child *session.ChildRef
	// waiting: the sub-agent's turn waits for an approval (subagent.go).
	waiting *childWait
}

// ToolExecute is the tool/execute waterfall. Its innermost fallback runs
// the invocation's Tool. Listeners may observe, replace or refuse a call;
// whatever they return is logged as the tool/result. The loop runs it
// once per tool call.
var ToolExecute = bus.NewWaterfall[*ToolInvocation, ToolOutput]("tool/execute")

// executeTool is the fallback of tool/execute.
func executeTool(ctx context.Context, inv *ToolInvocation) (out ToolOutput, _ error) {
	if inv.Tool == nil {
		return ToolOutput{Error: &session.ToolResultError{Code: CodeUnknownTool, Message: fmt.Sprintf("no tool named %q", session.Excerpt(inv.Call.Name, maxEcho))}}, nil
	}
	defer func() {
		if v := recover(); v != nil {
			out = ToolOutput{Error: &session.ToolResultError{Code: CodeToolPanic, Message: fmt.Sprint(v)}}
		}
	}()
	if iv, ok := inv.Tool.(invoker); ok {
		return iv.invoke(ctx, inv), nil
	}
	ctx = withKey(ctx, inv.Key)
	content, err := inv.Tool.Execute(ctx, json.RawMessage(inv.Call.Arguments))
	if err != nil {
		return ToolOutput{Error: toolResultError(ctx, err)}, nil
	}
	return ToolOutput{Content: content}, nil
}

// keyOfCall is the context key of a running call's idempotency key.
type keyOfCall struct{}

// withKey returns ctx carrying the idempotency key of the call it runs.
func withKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyOfCall{}, key)
}

// IdempotencyKey returns the idempotency key of the tool call ctx runs
// (a Tool's Execute is given such a context), "" outside one. A tool
// with an effect outside the process passes it on (an Idempotency-Key
// header, a database's unique key) so that running the call again, as a
// continuation after a crash may, has the effect once.
func IdempotencyKey(ctx context.Context) string {
	k, _ := ctx.Value(keyOfCall{}).(string)
	return k
}

// toolResultError turns a tool's error into the error the model sees.
func toolResultError(ctx context.Context, err error) *session.ToolResultError {
	var te *ToolError
	switch {
	case errors.As(err, &te):
		return &session.ToolResultError{Code: te.Code, Message: te.Message}
	case ctx.Err() != nil:
		return &session.ToolResultError{Code: session.CodeToolOutcomeUnknown, Message: "aborted while running: " + err.Error()}
	default:
		return &session.ToolResultError{Code: CodeToolFailed, Message: err.Error()}
	}
}

// checkArguments returns the arguments to hand the tool: a JSON object.
// Empty arguments mean {} (models send them for tools without parameters).
func checkArguments(args string) (string, *session.ToolResultError) {
	if args == "" {
		return "{}", nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		msg := "arguments must be a JSON object"
		if err != nil {
			msg += ": " + err.Error()
		}
		return "", &session.ToolResultError{Code: CodeInvalidArguments, Message: msg}
	}
	return args, nil
}

// runBatch runs the invocations of one batch, each on its own goroutine,
// and returns their outputs in call order. Once ctx is done, the calls
// still running have a.cfg.ToolGrace to return; those that do not are
// abandoned (left running, answered TOOL_ABANDONED) so that a tool that
// ignores its context cannot keep a cancelled turn, and the process, from
// ending.
func (a *Agent) runBatch(ctx context.Context, invs []*ToolInvocation) []ToolOutput {
	outs := make([]ToolOutput, len(invs))
	dones := make([]chan ToolOutput, len(invs))
	for i, inv := range invs {
		if inv.Key == "" { // a retry of a call a fork inherited has its origin's
			inv.Key = session.IdempotencyKey(inv.Session, inv.Call.ID)
		}
		done := make(chan ToolOutput, 1)
		dones[i] = done
		go func() {
			out, err := ToolExecute.Run(ctx, a.c, inv, executeTool)
			if err != nil {
				out = ToolOutput{Error: toolResultError(ctx, err)}
			}
			done <- out
		}()
	}
	var grace <-chan struct{} // closed when the grace after cancellation is over
	for i, done := range dones {
		select {
		case outs[i] = <-done:
			continue
		case <-ctx.Done():
		}
		if grace == nil {
			gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ToolGrace)
			defer cancel()
			grace = gctx.Done()
		}
		// A call that has already returned keeps its result even when the
		// grace is over too: select alone would pick between them at random.
		select {
		case outs[i] = <-done:
			continue
		default:
		}
		select {
		case outs[i] = <-done:
		case <-grace:
			a.c.Logger().Warn("tool did not return after the turn was cancelled; abandoned",
				"session", invs[i].Session, "turn", invs[i].Turn, "step", invs[i].Step, "tool", invs[i].Call.Name, "grace", a.cfg.ToolGrace)
			outs[i] = ToolOutput{Error: &session.ToolResultError{Code: CodeToolAbandoned, Message: fmt.Sprintf(
				"the turn was cancelled and the tool did not return within %s; it was abandoned and may or may not have taken effect", a.cfg.ToolGrace)}}
		}
	}
	return outs
}

func concurrencySafe(t Tool) bool {
	cs, ok := t.(ConcurrencySafe)
	return ok && cs.ConcurrencySafe()
}
