package session

// A call whose outcome is unknown (a tool/start was logged, then the
// process died: repair answered it TOOL_OUTCOME_UNKNOWN) stays unknown to
// the model until its real outcome is logged as a tool/reconcile. Two
// writers log one:
//
//   - the continuation turn, for a call whose tool declared itself
//     idempotent (ToolSpec.Idempotent in the request header of the step
//     that ran it): it logs a tool/retry, makes it durable, runs the tool
//     again with the same idempotency key, and logs the new outcome as a
//     tool/reconcile (By empty);
//   - a person or a program (vigil reconcile, POST
//     /v1/sessions/{id}/reconcile/{call}), between turns: the outcome they
//     found, attributed to the principal (By).
//
// The fold shows a tool/reconcile to the model from its position on (see
// [ReconcileMessage]); nothing earlier is rewritten.
const (
	// TypeToolRetry logs an attempt to learn an unknown outcome by running
	// an idempotent call again with its key. Turn-scoped (the
	// continuation turn, before its first step); sources = [the call's
	// TOOL_OUTCOME_UNKNOWN tool/result]. Made durable before the tool
	// runs, like tool/start. A crash before its tool/reconcile leaves the
	// call unknown; the next continuation retries again.
	TypeToolRetry = "tool/retry"
	// TypeToolReconcile logs the real outcome of a call whose outcome was
	// unknown. Sources = [the call's TOOL_OUTCOME_UNKNOWN tool/result]
	// (and, after a retry, [that result, the tool/retry]). At most one
	// per call; never for a call whose result is known.
	TypeToolReconcile = "tool/reconcile"
)

// ToolRetry is the data of tool/retry.
type ToolRetry struct {
	ID string `json:"id"`
}

// ToolReconcile is the data of tool/reconcile: the call's outcome, as a
// tool result says it (Content, or Error), and who established it.
type ToolReconcile struct {
	ID      string           `json:"id"`
	Name    string           `json:"name,omitempty"`
	Content string           `json:"content,omitempty"`
	Error   *ToolResultError `json:"error,omitempty"`
	// By names the principal who reconciled the call; empty for the
	// runtime's own retry.
	By string `json:"by,omitempty"`
}

// CodeToolError is the error code of a tool that failed: a tool's own
// error (agentloop.CodeToolFailed is this code), and a tool/reconcile
// whose call a person reports failed (vigil reconcile --failed REASON:
// the message is REASON).
const CodeToolError = "TOOL_ERROR"
