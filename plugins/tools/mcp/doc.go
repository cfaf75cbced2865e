// Package mcp is the "tools/mcp" plugin: the tools of any Model
// Context Protocol server, offered to a Vigil agent as ordinary tool
// services.
//
// # Connection
//
// One plugin instance talks to one server, through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk). With command (and args, env,
// dir) the server is a subprocess spoken to over stdio; with url it is a
// remote server spoken to over streamable HTTP (headers are sent with
// every request). Mount several servers by giving each entry its own id in
// plugins.yaml.
//
// On apply the plugin connects, lists the server's tools and provides
// each one selected by include and exclude (path.Match globs on the
// server's names) as a tool service "tool/<prefix><name>", with the
// server's description and input JSON Schema. A tool whose
// <prefix><name> the model APIs would refuse ([agentloop.CheckToolName]:
// empty, over 64 bytes, anything but letters, digits, _ and -, so no path
// and no dot) is skipped with a warning that says why; the others are
// provided. A notifications/tools/list_changed from the server lists them again:
// tools that went away or changed are withdrawn, new ones provided. The
// agent reads the tool services at every step, so the change shows in
// the next request/header (reason change) without reloading anything.
//
// The rule: a list change announced before a tool result is in force for
// the next request. From the moment the notification is read until the
// new list is applied, the plugin holds [agentloop.ToolsChanging], and
// the agent waits for it before it builds a request — at most the entry's
// timeout, after which the hold lapses and the request is built with the
// tools as they are. Over stdio the notification is noted as the
// connection reads it, before the result that follows it on the pipe, so
// the rule holds every time. Over streamable HTTP a notification travels
// on a stream of its own and is noted when it arrives: one that arrives
// after the result is in force from the request after it is applied.
//
// # Calls
//
// A call is an MCP tools/call bounded by timeout (default 60s) and by the
// turn's context: cancelling the turn cancels the call on the server. The
// result's text content is what the model sees; other content (images,
// audio, resources) is summarised with its type and size. A result the
// server marks as an error, a JSON-RPC error, a timeout and a lost
// connection become error tool results with the codes [CodeToolError],
// [CodeRequestFailed], [CodeTimeout] and [CodeUnavailable].
//
// # Failure and process lifetime
//
// When the connection ends without the plugin closing it (the server
// process died, the HTTP session was lost), the failure is logged, the
// fiber's tools are withdrawn and the fiber is left failed with an
// [ErrServerExited] cause (see [bus.Fiber.Err]); the host, its other
// plugins and the session logs are unharmed. A later config update of the
// entry connects again.
//
// A subprocess belongs to the plugin's fiber and leads its own process
// group. Disposing the fiber closes it gracefully (stdin closed, then
// SIGTERM, then SIGKILL), then kills what is left of its process group;
// the context it was started with ends with the fiber too. On Linux it
// also gets SIGKILL as its parent death signal, so it does not outlive a
// host that is killed outright (what the server itself started is out of
// that signal's reach).
package mcp
