// Package a2a is the "tools/a2a" plugin: it lets an agent call other
// agents that speak A2A (the Agent2Agent protocol) as tools, through the
// A2A Go SDK's client (github.com/a2aproject/a2a-go).
//
// Each configured agent card (its URL, or the agent's base URL, whose
// card is at /.well-known/agent-card.json) becomes one tool: its name
// (the card's, made a tool name, or the one configured) and description,
// and the parameters {task, context}. A call sends the task as a message
// and waits for the remote task to complete, fail or wait for input; its
// result is JSON naming the remote task and context (the context
// continues the conversation in a later call), its state and the answer.
// A call is logged like any tool call, so the remote task's id is in the
// log. A remote agent that is a Vigil server also sends its receipt
// (vigil/receipt), which the result carries as it came.
package a2a
