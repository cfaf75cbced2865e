// Package mcpserve offers the agents of a composition to MCP clients,
// through the official MCP Go SDK: each agent is a tool
// ([agentsrv.Agents]), and a call runs one turn of it through the
// runtime's turn API, in a new session or, with the session argument
// ([agentsrv.SessionArg]), in one to continue.
//
// What the turn streams reaches the client as progress notifications
// (when the call gave a progress token), cancelling the call cancels the
// turn (it ends aborted in the log), and every answer carries its
// receipt in _meta under [agentsrv.MetaKey]. A turn that waits for a
// person's approval asks the client: as an input-required result (the
// multi round-trip of protocol 2026-07-28) or an elicitation (older
// protocols), when the client can answer one and the caller may decide;
// the answers are logged as decisions by the caller, and the turn
// resumes through [vigil.Runtime.Decide]. A client that can do neither
// gets a result naming the waiting session and calls, to be decided
// through the API or the CLI (vigil approve); the session waits in the
// store meanwhile, as any suspended turn does.
//
// `vigil mcp` serves it over stdio; `vigil serve` at /mcp over
// streamable HTTP, behind the API's authentication, Host check and
// tenants (an [Access] of the server's).
package mcpserve
