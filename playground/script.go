package playground

import (
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/compaction"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
)

// The demo: two turns, the first with a calc tool call that waits for the
// visitor's decision (the approvals plugin asks before every calc call),
// and between them a compaction that replaces the first turn's question,
// tool call and tool result with a summary.

// demoPrompts are the user messages of the demo's turns.
var demoPrompts = []string{
	"How many seconds are there in a week?",
	"And in a single day?",
}

// demoScript answers the demo's model calls in order: the two steps of
// turn 1, the compaction's one-shot summary, then turn 2.
func demoScript() scripted.Config {
	return scripted.Config{Script: []scripted.Reply{
		{Text: "Let me compute that.", ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "7*24*60*60"}}}},
		{Text: "A week has 604800 seconds."},
		{Text: "The user asked how many seconds a week has; the calc tool computed 7*24*60*60 = 604800."},
		{Text: "A day has 86400 seconds: a week divided by seven."},
	}}
}

// DefaultPrompt is the user message of the next request the page offers.
const DefaultPrompt = "And in a fortnight?"

// nextScript answers every request the page sends on a fork that gets
// past the invariants plugin.
func nextScript() scripted.Config {
	return scripted.Config{Repeat: true, Script: []scripted.Reply{
		{Text: "A fortnight has 1209600 seconds."},
	}}
}

// agentConfig is the agent of the demo and of every turn on a fork, so
// that their request headers agree.
var agentConfig = agentloop.Config{
	System:   "You are a careful assistant. Use the calc tool for arithmetic.",
	Model:    "scripted",
	MaxSteps: 4,
}

// compactionConfig makes the demo compact before its second turn: the
// first leaves four messages, one more than allowed, and only the last is
// kept verbatim.
var compactionConfig = compaction.Config{MaxMessages: 3, Keep: 1}

// approvalConfig is the approvals plugin's policy: a calc call waits for
// the visitor's decision, anything else runs.
var approvalConfig = &approvals.Config{Default: "allow", Rules: []approvals.Rule{
	{Tool: "calc", Action: "ask", Reason: "the playground asks you before every calc call"},
}}
