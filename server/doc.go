// Package server is Vigil's HTTP API: sessions, queued turns, event
// streams (JSONL, or server-sent events resumable with Last-Event-ID),
// approvals, cancellation, verification, health and metrics, under /v1,
// described by the OpenAPI 3.1 document it serves at /openapi.json.
//
// The server runs no turn itself: a posted turn (or decision) is queued
// in the composition's store ([session.Queue]) and run by a worker
// ([vigil.Runtime.Work]) in this process or any other sharing the store.
// Events are read from the store, so a client streaming a session sees
// every event whichever worker appended it.
//
// The composition's agents are served over MCP at /mcp
// (agentsrv/mcpserve) and over A2A at /a2a/{agent} (agentsrv/a2aserve:
// a task is a queued turn too), behind the same gate.
//
// Every request is made by a [Principal]: the one a bearer token names,
// through an [Authenticator] ([Tokens] from a token file, [OIDC] for an
// issuer's JWTs, a [Chain] of both), or [LocalPrincipal] on a server
// without authentication, which binds loopback only ([CheckBind]). A
// browser's EventSource, which cannot send the token, authenticates its
// stream with a single-use ticket ([Ticket]).
//
// It is safe by default: with authentication every request but /healthz
// and /openapi.json needs credentials; a request whose Host header names
// another server than the bound address (a DNS-rebinding page) is refused
// before anything else, and a POST that is not application/json (a form
// or text/plain post of any web page) before its body is read; request
// bodies are bounded, cross-origin requests are refused unless origins
// are named, and every error is a JSON body with a stable code ([Error]).
package server
