package session

// Core event types. The names are part of the on-disk format: they never
// change and never derive from Go type names.
const (
	TypeTurnStart     = "turn/start"
	TypeTurnEnd       = "turn/end"
	TypeStepStart     = "step/start"
	TypeStepEnd       = "step/end"
	TypeUserMessage   = "user/message"
	TypeRequestHeader = "request/header"
	TypeRequestDigest = "request/digest"
	// TypeRequestOneshot logs a model call that is not a step of a turn (a
	// compaction summary, a title): its purpose, digest, header and
	// instruction; its sources are the records whose projections its
	// messages start with (see [OneshotRequest]).
	TypeRequestOneshot = "request/oneshot"
	// TypeRequestUsage logs the token usage of a one-shot's reply, after
	// the reply; its sources are [its request/oneshot].
	TypeRequestUsage = "request/usage"
	// TypeStepUsage logs the usage of a step's reply before the step
	// suspends on approvals, so that the step/end that closes it later (in
	// any process, or by repair) carries it.
	TypeStepUsage        = "step/usage"
	TypeAssistantChunk   = "assistant/chunk"
	TypeAssistantMessage = "assistant/message"
	TypeToolCall         = "tool/call"
	// TypeToolStart marks that the execution of a logged tool call began.
	// Crash repair uses it to tell a call that never started
	// (CodeToolNotStarted) from one whose outcome is unknown
	// (CodeToolOutcomeUnknown). Its data is {"id":"<call id>"}.
	TypeToolStart       = "tool/start"
	TypeToolResult      = "tool/result"
	TypeCompactionStart = "compaction/start"
	TypeCompactionEnd   = "compaction/end"
	TypeEndSeed         = "session/end-seed"
)

// Reasons a turn ends (turn/end data.reason).
const (
	ReasonCompleted   = "completed"
	ReasonAborted     = "aborted"
	ReasonError       = "error"
	ReasonBlocked     = "blocked"
	ReasonMaxSteps    = "max-steps"
	ReasonInterrupted = "interrupted"
	// ReasonBudget: a limit (tokens, cost, wall clock, repeated calls)
	// refused the turn's next step before its request; turn/end's error
	// says which.
	ReasonBudget = "budget"
)

// Continuable reports whether a turn that ended with reason may be
// carried on by a continuation turn (turn/start {"continues": N}): it
// was cut short before the model answered, by a crash (interrupted), by
// a cancel (aborted: Ctrl-C, a cancelled job) or by a limit (budget).
func Continuable(reason string) bool {
	return reason == ReasonInterrupted || reason == ReasonAborted || reason == ReasonBudget
}

// ContinuableReasons names the reasons [Continuable] accepts, for the
// messages that refuse a continuation.
const ContinuableReasons = ReasonInterrupted + ", " + ReasonAborted + " or " + ReasonBudget

// Reasons a request header is logged (request/header data.reason).
const (
	HeaderInitial = "initial"
	HeaderResume  = "resume"
	HeaderChange  = "change"
)

// Step finish reasons (step/end data.finish).
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
	FinishError     = "error"
)

// Error codes of synthetic tool results written by crash repair.
const (
	// CodeToolNotStarted: the call was logged but its execution never began.
	CodeToolNotStarted = "TOOL_NOT_STARTED"
	// CodeToolOutcomeUnknown: execution began (a tool/start was logged) but
	// no result was; the tool may or may not have had its effect.
	CodeToolOutcomeUnknown = "TOOL_OUTCOME_UNKNOWN"
)

// Surface operations.
const (
	OpAppend  = "append"
	OpReplace = "replace"
)

// Surface says how a surface event changes the surface. The zero value (or
// Op "append") appends; Op "replace" splices the surface range from Start
// to End (seqs on the surface, inclusive) out and puts the event in its
// place.
type Surface struct {
	Op    string `json:"op"`
	Start int64  `json:"start,omitempty"`
	End   int64  `json:"end,omitempty"`
}

// Event is a candidate record (see [LogState.Stage]): everything of a record except
// what the session assigns (seq and time). Data is a payload struct of
// this package (value or pointer), a json.RawMessage or []byte of JSON,
// any other value encoding/json can marshal (for plugin-owned types), or
// nil for {}.
// Append encodes Data once; changing it afterwards changes nothing.
type Event struct {
	Type string
	// Turn and Step locate turn- and step-scoped events; zero means absent.
	Turn, Step int
	// Surface is set only on replace; surface events append by default.
	Surface *Surface
	// Sources are the seqs this event derives from.
	Sources []int64
	// Ignorable marks a plugin-owned type that readers without the plugin
	// may skip. Core types are never ignorable.
	Ignorable bool
	Data      any
}

// TurnStart is the data of turn/start.
type TurnStart struct {
	// Continues is set on a continuation turn: the number of the
	// interrupted turn it carries on. No user/message follows it; the
	// model is asked again from the fold.
	Continues int `json:"continues,omitempty"`
	// By names who asked for the turn (the authenticated principal that
	// posted it to the API), when someone said.
	By string `json:"by,omitempty"`
}

// TurnEnd is the data of turn/end.
type TurnEnd struct {
	Reason string `json:"reason"`
	Error  string `json:"error,omitempty"`
}

// StepStart is the data of step/start.
type StepStart struct{}

// StepEnd is the data of step/end.
type StepEnd struct {
	Finish string `json:"finish,omitempty"`
	Usage  *Usage `json:"usage,omitempty"`
}

// Usage counts the tokens of one model reply.
type Usage struct {
	Input  int `json:"input"`
	Output int `json:"output"`
}

// UserMessage is the data of user/message (a surface event).
type UserMessage struct {
	Content string `json:"content"`
	// Origin says who wrote a message no person wrote: OriginOutputValidation
	// for the loop's feedback on an answer that did not match the output
	// schema. Empty for a person's message (and a compaction summary).
	Origin string `json:"origin,omitempty"`
}

// OriginOutputValidation is the origin of the user/message the loop logs
// when the final answer does not match the header's output_schema: the
// validation errors, for the model's one retry.
const OriginOutputValidation = "output-validation"

// RequestHeader is the data of request/header.
type RequestHeader struct {
	Reason string `json:"reason"`
	Header Header `json:"header"`
}

// Digest is the data of request/digest: the [RequestDigest] of the request
// actually sent and how many messages it had. (The function RequestDigest
// computes it, hence the payload's shorter name.)
type Digest struct {
	SHA256   string `json:"sha256"`
	Messages int    `json:"messages"`
}

// Oneshot is the data of request/oneshot: why the call was made, the
// [RequestDigest] of the request sent and how many messages it had, and
// what the request is made of besides its record's sources: the
// instruction that follows their projections and the header (see
// [OneshotRequest]).
type Oneshot struct {
	Purpose  string `json:"purpose"`
	SHA256   string `json:"sha256"`
	Messages int    `json:"messages"`
	// Instruction is the last message of the request, a user message.
	// Empty only in a one-shot logged before one-shots were derivable
	// (its request cannot be re-derived from the log).
	Instruction string `json:"instruction,omitempty"`
	// Header is the request's header; nil when it is empty.
	Header *Header `json:"header,omitempty"`
}

// AssistantChunk is the data of assistant/chunk: exactly one of Text,
// Reasoning or ToolCall is set.
type AssistantChunk struct {
	Text      string         `json:"text,omitempty"`
	Reasoning string         `json:"reasoning,omitempty"`
	ToolCall  *ChunkToolCall `json:"tool_call,omitempty"`
}

// ChunkToolCall is a streamed fragment of a tool call. Fragments with the
// same Index belong to one call.
type ChunkToolCall struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// AssistantMessage is the data of assistant/message (a surface event); its
// record's sources are the chunks it was assembled from.
type AssistantMessage struct {
	Content   string     `json:"content,omitempty"`
	Reasoning string     `json:"reasoning,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ToolStart is the data of tool/start.
type ToolStart struct {
	ID string `json:"id"`
}

// ToolResult is the data of tool/result (a surface event); its record's
// sources are [the seq of its tool/call].
type ToolResult struct {
	ID      string           `json:"id"`
	Name    string           `json:"name,omitempty"`
	Content string           `json:"content,omitempty"`
	Error   *ToolResultError `json:"error,omitempty"`
	// Child names the sub-agent's session that produced the result, and
	// its last seq when it did, for a delegation; nil otherwise.
	Child *ChildRef `json:"child,omitempty"`
}

// ChildRef names a child session and a seq of it: in a tool/result, the
// sub-agent's session the call delegated to and the last seq of the turn
// that answered it.
//
// Root binds the child's log at that seq: the base64 tree hash
// ([RootOf]) of the child's records 0 to Seq, a tree of Seq+1 leaves.
// With it, a child session cannot be swapped or edited up to Seq without
// breaking the parent's signed checkpoints; "" in logs written before it
// (the delegation is then not bound).
type ChildRef struct {
	ID   string `json:"id"`
	Seq  int64  `json:"seq"`
	Root string `json:"root,omitempty"`
}

// ToolResultError marks a failed tool result.
type ToolResultError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// Compaction is the data of compaction/start and compaction/end.
type Compaction struct {
	ID string `json:"id"`
}

// EndSeed is the data of session/end-seed.
type EndSeed struct{}
