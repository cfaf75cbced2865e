// Package scripted is the "provider/scripted" plugin: a deterministic
// model for demos and tests. It needs no network and no key.
//
// With a script (config key script) it answers each model call with the
// next scripted reply: text, reasoning and tool calls, streamed in several
// chunks, or a scripted failure. Replies are used one per call across
// turns, so a turn that calls a tool and then answers takes two replies.
//
// Without a script it plays the default one, derived from each request
// alone: when the last message is not a tool result it calls list_dir on
// "."; when it is, it answers by describing the entries that tool result
// actually holds. A one-shot request (not built by the loop: a summary, a
// title) gets the gist of the messages before its instruction.
package scripted
