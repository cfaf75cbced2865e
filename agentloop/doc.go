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
//	step/start → request/header (when needed) → request/digest (once the
//	request passed and is handed to the provider) → assistant/chunk… →
//	assistant/message → (tool/call → tool/start → tool/result)… → step/end
//
// Steps follow while the model asks for tools and the step limit allows;
// a turn whose last allowed step still asked for tools ends with reason
// max-steps.
//
// Before each step, before its step/start, the loop emits agent/step
// ([StepBegin]) for limits (the budget plugin): a listener's
// [*BudgetError] ends the turn with reason budget, nothing of the step
// logged; [StepCheck.Cap] lowers the step's max_tokens, which then goes
// into the header the step logs, so the request is still the logged
// header plus the fold.
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
// The request is marked loop-built and sealed, and dispatched through the
// llm/stream waterfall ([LLMStream]). The seal is a token only this
// package can mint: it owns the header and the fold the request was built
// from — the loop's own fold of the session, fed with the records
// appended since its last step — and its digest (session.RequestDigest)
// is computed over them, encoding only the messages that are new. The
// messages are a read-only view of that fold ([session.Messages]): the
// seal, every listener and the provider hold the same one, and none can
// write it (the array is unexported; what At and All return has tool
// calls of the caller's own), while the fold only ever appends past the
// end of every view it made. So no copy of the conversation is made or
// checked per step: the guarantee that nobody changed the messages holds
// by construction. The header holds slices, so the listeners and the
// provider each get a copy of their own. The innermost fallback refuses,
// with [ErrRequestMutated], a request that a listener changed or replaced
// (other messages put in place of the view are compared with the fold
// message by message; the listeners' header with the seal's), then logs
// request/digest and hands the request over. A step costs what changed
// since the last one, not the length of the conversation or of the log.
// Every provider this package hands out ([ProviderService],
// [WithProvider]) is wrapped: the wrapper refuses, with [ErrUnsealed], a
// request without a seal or one that did not come through its own
// dispatch's fallback, and gives the provider the sealed request with a
// header no listener holds. A listener that answers a request itself (a
// short-circuit) hands nothing to a provider, so no request/digest is
// logged for it.
//
// The boundary is Go's type system: reflect can read a view but not write
// it, and only code that imports unsafe (or reaches memory some other way
// the language does not check) could write the fold's messages, as it
// could write the bytes of any string the loop holds. An in-process
// plugin is trusted that far; a plugin that must not be is run out of
// process (plugins/external), where it gets the messages over the wire.
//
// The one other way to a model is a declared one-shot ([Complete]): a
// purpose, the records it shows the model and an instruction, under a
// header; its request is made of those and nothing else, so the log
// re-derives it. It is logged as request/oneshot when handed to the
// provider (its usage as request/usage after the reply), refused from
// inside a step's model call ([ErrOneShotInStep]: the context of a step's
// dispatch is marked) and inside an open turn ([ErrOneShotInTurn]).
// docs/architecture.md states the guarantee.
//
// A header names the provider ([Namer]) and, when the agent sets no model,
// the provider's default one ([DefaultModeler]): the header in force names
// the model each request asks for.
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
// Tool-call ids are unique in a session's log. A call whose provider id
// the log already uses (servers that number calls call_0 in every
// response) or that has none is logged with id_<turn>_<step>_<index>
// (call_<turn>_<step>_<index> for a missing id) on its chunks, its message
// and its tool/call alike; the id depends on the log alone, so a replay
// serving the logged chunks logs the same ids.
//
// A plugin's veto ([bus.Veto]) of an event the loop appends — a tool/call,
// a tool/start — ends the turn with reason blocked and a [*BlockedError]
// naming the plugin and its reason; the step is closed as crash repair
// would, its calls answered TOOL_NOT_STARTED with that cause. A veto that
// matches [ErrInvariant] (the invariants plugin's) ends it with error.
//
// # Approvals
//
// Before a step logs its calls, it asks the tool/approve hook
// ([ToolApprove]) about each: allow (or no answer) runs it; deny logs it
// with a POLICY_DENIED result the model sees; ask logs it with an
// approval/request (a veto listener may answer ask too, with an
// [*AskError]). The calls that need no decision run, then the step is
// suspended: its reply's usage is logged (step/usage, which the step/end
// that closes it carries), the log is flushed, the turn left open, and
// Run returns Reason "suspended", the pending calls and a
// [*SuspendedError]. Loading
// such a log repairs nothing (session.Suspended). [Decide] logs an
// approval/decision for one pending call, in any process;
// [Agent.Resume], once all are decided, runs the allowed calls, answers
// the denied ones APPROVAL_DENIED with the reason, and continues the turn.
// A decision of scope session ("always for this session") allows the
// later calls it covers (approval.Cover: the same tool, asked for the same
// reason by the same rule): the loop logs each one's request and its own
// decision by "session-rule" citing it, and does not wait for a person.
//
// Cancelling the turn cancels the context of the tools running. A tool
// that has not returned Config.ToolGrace (default 3s) later is abandoned:
// its goroutine is left to finish on its own, its call is answered with a
// [CodeToolAbandoned] result, and the turn ends aborted, so a tool that
// ignores its context cannot keep a process from stopping.
//
// A turn cut by a crash is closed by repair when its session is next
// opened (turn/end "interrupted"). [Agent.Continue] carries it on: it logs
// turn/start {"continues": N} and no user message, and asks the model
// again from the fold, which holds the interrupted calls'
// TOOL_OUTCOME_UNKNOWN / TOOL_NOT_STARTED results. A turn cancelled
// (aborted) or ended by a limit (budget) is carried on the same way. A
// session whose last turn ended otherwise is refused with
// [ErrNothingToContinue].
//
// # Structured output
//
// Config.OutputSchema, a JSON Schema (compiled with
// santhosh-tekuri/jsonschema; a $ref outside the schema is refused), goes
// into the request header as output_schema, so providers ask for it
// natively and the invariants and digests cover it. When a step ends the
// turn (no tool calls), its answer — that step's assistant content — is
// validated. An answer that does not match gets one retry: the loop logs
// a user/message with origin output-validation listing the problems and
// runs another step (within MaxSteps; with no step left there is no
// retry). A second miss, or a miss with no retry left, ends the turn with
// reason error and an [*OutputError] matching [ErrOutputInvalid]. The
// retry is counted from the log, so a turn resumed after an approval
// keeps the bound.
//
// # Sub-agents
//
// An agent whose config has as_tool ([AsTool]) is offered to the others
// as a tool (a [Delegation]); an agent offers the tools its config's
// tools select by name or path.Match pattern, and without that list every
// tool but the sub-agents. A call of a sub-agent creates a child session
// (live.Manager.CreateChild) whose header names the caller's session, the
// seq of the call's tool/call and its id, and runs one turn of the
// sub-agent there with the call's task (or, for custom parameters, the
// arguments' JSON) as the user message, under the turn's context: the
// calls of one step run concurrently, and cancelling the turn aborts its
// children. The child's final assistant message is the call's tool/result,
// naming the child and its last seq (session.ChildRef); a child turn that
// does not complete is a [CodeSubagentFailed] error result. A child that
// suspends on approvals suspends the call: its tool/start waits for the
// child's return, and it is logged with an approval/request of its own;
// [Agent.Resume] of the parent takes the call's decision to the child's
// pending calls and resumes the child.
// [Config.CheckPeers] checks an agent against its whole composition at
// load (cycles, tool patterns, provider entries); [AgentServices] holds
// every agent by entry id, and [AgentService] the entry point.
//
// # Status
//
// An agent announces its status on agent/status ([StatusEvent]): idle →
// running when a turn starts, running → idle when the last one ends, and
// → disposed when it is closed. It never announces a status it already
// has.
package agentloop
