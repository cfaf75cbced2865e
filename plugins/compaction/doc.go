// Package compaction is the "compaction" plugin: between turns, when a
// session's conversation passes a size threshold, it replaces the older
// part with a summary, without destroying anything.
//
// It listens to agent/prepare, which the agent loop emits before each
// turn, outside any turn (never from inside a session/event observer,
// where appending to the same session is an error). When the fold has
// more than max_messages messages or more than max_bytes bytes of
// content, it picks the surface range before the keep most recent
// messages, balanced so that no tool call is separated from its result
// (session.BalancedRange), asks the turn's provider for a summary with a
// declared one-shot request (agentloop.Complete) made of the log alone:
// the range's events as the model saw them, then the prompt (config
// prompt, default DefaultPrompt), under the turn's request header (its
// system prompt and tools; no output schema or stop sequences). It logs
//
//	request/oneshot (purpose "compaction", sources = the events
//	summarized, the prompt as its instruction, the header) →
//	request/usage (the summary's tokens) → compaction/start →
//	user/message (replace start..end, sources = every shadowed surface
//	event) → compaction/end
//
// so `vigil verify` re-derives the summary's request, and budgets and
// `vigil sessions show` count what it cost.
// The summary stands in for the range in every later request; the
// original events stay in the log, so a fork or an audit still sees them.
// A failed summary is logged as a warning and the turn runs uncompacted.
//
// The plugin is a [Compactor] on agent/prepare. A host that compacts on
// demand (a chat's /compact command) uses one directly: [New], then
// [Compactor.Compact] on the session between turns.
package compaction
