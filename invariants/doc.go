// Package invariants proves at runtime that what a model is shown is what
// the session log can reconstruct, and that the log itself is well formed.
//
// The plugin (registered as "invariants") is a pure listener: it never
// changes behaviour except to refuse. It is mounted in tests and demos.
//
//   - Append rules (seq-order, turn-nesting, step-nesting, step-scope,
//     tool-pairing, turn-enclosure, surface-replace, assistant-assembly,
//     approval-before-run) run
//     in internal/dispatch, before an event commits. A valid event's trace
//     transition is staged under the identity of the exact record; it is
//     applied only when that same record reaches the plugin's session/event
//     listener after the commit (staging). A later veto therefore leaves
//     the trace untouched.
//   - Request rules (request-reconstruction, request-header,
//     orphaned-tool-result) run in the veto phase of the llm/stream
//     dispatch (a [bus.Veto] listener), which the bus runs before every
//     llm/stream listener however and whenever registered (prepended after
//     this plugin, re-registered by a reload): no listener can answer a
//     loop-built request, or change it, before the check. A veto listener
//     registered earlier may change the request first; the check compares
//     it with a fresh fold of the records before the in-flight step's
//     step/start, sharing nothing with the live session, so that is caught,
//     and a change after the check is refused by agentloop's seal. The
//     fold is the plugin's own derivation, kept incrementally from the
//     records it saw committed (its trace projects each surface record
//     with the pure per-record projection, session.Project, and snapshots
//     the messages at each step/start). A request whose messages share
//     their array with the view the plugin passed at the previous step
//     (session.Messages.SharedPrefix: views cannot be written) is
//     compared from where that comparison ended, so a check costs what
//     the step added, not the request's length nor the log's; a request
//     the trace cannot place is checked
//     against a fold of the whole log ([CheckRequest]). Only
//     loop-built requests are checked at runtime; a one-shot's request is
//     made of its log by agentloop (its cited records' projections and its
//     logged instruction, session.OneshotRequest), and [Verify] re-derives
//     it offline.
//   - status-transition checks agent/status.
//   - request-digest is checked by [Verify], offline, over stored logs,
//     with the same rule code as the runtime plugin: each step's digest and
//     each one-shot's (those an older build logged without their
//     instruction are listed in [Report].OneshotsUnderived instead).
//
// Modes: "strict" (the default) refuses with an [*InvariantError] whose
// Code is "INVARIANT"; "warn" emits an invariant/violation event and an
// hclog warning and refuses nothing; "off" registers no listener at all.
// The seal is not part of this plugin: in warn mode, or with no plugin
// mounted, agentloop's provider wrapper still refuses any request changed
// after it was built. A refused step logs no request/digest (the loop logs
// it only for a request handed to the provider), so its log verifies; the
// refusal is in turn/end's error.
//
// The subpackage tests in invariants/adversarial attack all this with
// in-process plugins, one per known side door, and pin what the
// out-of-process protocol offers (nothing that reaches a request).
package invariants
