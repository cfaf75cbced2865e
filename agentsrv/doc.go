// Package agentsrv is what the protocol servers (MCP in
// [github.com/vigil-run/vigil/agentsrv/mcpserve]) share: the agents of a
// composition as a client sees them ([Agents]: one tool each, its as_tool
// name, description and parameters, or its entry id and {task}), the
// turn a call asks for ([Agent.Call]: a new session or, with the
// documented session argument, one to continue), and the receipt every
// answer carries ([ReceiptOf]: the session, the seq the answer stands at,
// the digest of the model request it came from, and the turn's signed
// checkpoint where the log is signed), which `vigil verify` checks.
//
// It runs no turn itself: the protocol servers run them through the
// runtime's turn and decision APIs ([vigil.Runtime.Turn],
// [vigil.Runtime.Decide]), the one turn path there is.
package agentsrv
