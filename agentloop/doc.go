// Package agentloop runs the agent loop: turns and steps over a session
// log, request building, llm/stream dispatch, tool calls and agent status.
//
// # A turn
//
// [Agent.Run] first emits agent/prepare ([TurnPrepare]) outside any turn
// (compaction summarizes there), then logs, in order:
//
//	turn/start → user/message → step… → turn/end
//
// and each step:
//
//	step/start → request/header (when needed) → request/digest →
//	assistant/chunk… → assistant/message → (tool/call → tool/start →
//	tool/result)… → step/end
//
// Steps follow while the model asks for tools and the step limit allows;
// a turn whose last allowed step still asked for tools ends with reason
// max-steps.
//
// # Requests
//
// A step's [Request] is the latest request/header plus the fold of the
// log strictly before the step's step/start. The header is logged with
// reason initial on a log without one, resume on the first step an Agent
// (one loop instance) runs on a log that has one, and change whenever the
// wanted header — provider name, config, the tool services read at that
// step — differs from the logged one (session.HeaderEquals).
//
// The request is marked loop-built and sealed: its digest
// (session.RequestDigest) is logged as request/digest and dispatched
// through the llm/stream waterfall ([LLMStream]). The innermost fallback
// recomputes the digest and refuses, with [ErrRequestMutated], a request
// that a listener changed or replaced; the provider then receives exactly
// the request the listeners before it saw. One-shot requests ([Complete])
// are not marked and not logged.
//
// # Streams and failures
//
// Each content chunk is logged as assistant/chunk as it arrives, and the
// assistant/message cites them as its sources; a provider that does not
// stream yields one chunk. Cancelling the context ends the turn with
// reason aborted: the chunks delivered so far are assembled and kept. A
// [*ProviderError] marked Retryable that happens before any chunk is
// retried with backoff ([Backoff]), up to Config.MaxAttempts; any other
// stream error ends the turn with reason error. Tool calls of a cut
// stream are answered with TOOL_NOT_STARTED results so that every call in
// the log has its result.
//
// # Tools
//
// Tools are services under "tool/" ([ProvideTool]), read at every step
// just before the request is built. A provider that learned its tools
// changed and is applying the change holds [ToolsChanging]; the step
// waits for the holds on its bus (each bounded by its holder) before it
// reads the tools, so a change announced before a tool result is in force
// for the next request. Each call is logged
// as tool/call, run through the tool/execute waterfall ([ToolExecute])
// and answered by a tool/result in call order. Consecutive calls of tools
// that are [ConcurrencySafe] run concurrently. Tool errors, panics,
// unknown tools and arguments that are not a JSON object become error
// results the model sees; they never end the turn.
//
// Cancelling the turn cancels the context of the tools running. A tool
// that has not returned Config.ToolGrace (default 3s) later is abandoned:
// its goroutine is left to finish on its own, its call is answered with a
// [CodeToolAbandoned] result, and the turn ends aborted, so a tool that
// ignores its context cannot keep a process from stopping.
//
// # Status
//
// An agent announces its status on agent/status ([StatusEvent]): idle →
// running when a turn starts, running → idle when the last one ends, and
// → disposed when it is closed. It never announces a status it already
// has.
package agentloop
