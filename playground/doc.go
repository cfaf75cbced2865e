// Package playground serves the page of `vigil demo`: a scripted session
// run through the real runtime — the bus, the agent loop, the compaction
// plugin and the invariants plugin in strict mode — shown as the
// append-only event log beside the messages derived from it and the next
// request about to go to the model.
//
// # What runs
//
// A [Server] owns one bus root with the invariants plugin (strict), the
// store/memory plugin (which provides the session manager), the approvals
// plugin and the compaction plugin, scoped to the demo sessions. Play
// creates a demo session and runs its turns with a scripted model and the
// calc tool; each committed event reaches the page over server-sent
// events, one by one, with the fold of the log up to it
// (session.DeriveMessages), the next request (the latest request/header
// and the fold the loop will send), whether a turn is open (then there is
// nothing to send yet) and the calls a suspended turn waits for. The page
// never folds anything itself.
//
// # Visitors
//
// Every page load is a visitor: the page asks for one (POST /api/visitor,
// answered with a random id) and names it in every request after
// (?visitor=ID). A visitor has its own demo session, player and
// experiments, and its event stream carries only those; two tabs, or two
// people, never see or drive each other's sessions. The runtime is
// shared. A visitor without an open event stream that made no request for
// 15 minutes is disposed (its demo stopped, its sessions closed), and at
// most 64 are kept: a new one evicts the least recently seen visitor
// without an open page, or is refused (503) when every one has a page
// open. A request naming a visitor the server does not keep gets 404, and
// the page starts over with a new visitor.
//
// Pacing is done in the runtime, not in the page: a session/event observer
// of the demo session holds each commit until the page's clock (play) or
// the user (step) lets it through, so the loop really runs event by event.
//
// # Approvals
//
// The approvals plugin is mounted with a policy that asks before every
// calc call, so the demo's first turn suspends on its tool call: the log
// ends with the approval/request, the player's state is "waiting", and
// the state of the log (session.Suspended) lists the pending call, which
// the page shows with Allow, Deny (with a reason, shown to the model) and
// "Always for this session" (a decision of scope session). POST
// /api/decide logs the decision with agentloop.Decide — at once, whatever
// the pace — and, when every call of the step is decided, the demo's turn
// resumes (agentloop.Agent.Resume), paced as any turn. A decision on a
// call that waits for none, or was already decided, is refused (409),
// nothing logged; one on a call the session never made gets 404.
//
// # Being the bad actor
//
// Nothing the page does writes to a demo session. Sending the next
// request runs a real turn on a fork:
//
//   - Deleting an event seeds a new session with the log minus that event
//     (renumbered, sources and replace ranges remapped). A log that breaks
//     an append rule is refused when it is seeded; otherwise a turn runs on
//     it whose llm/stream request is replaced, by a veto listener in front
//     of the invariants plugin's check, with the messages a loop that kept its own
//     list would send: the fold of the original log plus the new prompt.
//   - Editing the next request changes a message or the system prompt of
//     the loop-built request in the same listener, bypassing the log.
//
// The invariants plugin then refuses the request (request-reconstruction,
// request-header) and the page shows its [invariants.Violation] beside a
// message-by-message comparison of the request with a fresh fold of the
// log before the step, the very data the plugin compared. Fork, replay
// (every request re-derived through provider/replay) and verify (the
// offline rules over the stored log) work on any session shown.
//
// # Who may drive it
//
// The playground has no authentication: it is for the person at this
// machine. A request whose Host header is not loopback (127.0.0.1, [::1],
// localhost) or one of [Options.Hosts] is refused with 403, which stops a
// DNS-rebinding page (its requests name its own domain); so is an action
// (a POST, or any request to an action's path) whose Origin header names
// another host than the request's, which stops a page of another site
// posting a form or a no-cors fetch. Requests without Origin (curl) pass.
//
// The assets (HTML, CSS, JavaScript) are embedded; the page loads nothing
// from elsewhere and works offline.
package playground
