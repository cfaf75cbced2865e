// Package invariants proves at runtime that what a model is shown is what
// the session log can reconstruct, and that the log itself is well formed.
//
// The plugin (registered as "invariants") is a pure listener: it never
// changes behaviour except to refuse. It is mounted in tests and demos.
//
//   - Append rules (seq-order, turn-nesting, step-nesting, step-scope,
//     tool-pairing, turn-enclosure, surface-replace, assistant-assembly) run
//     in internal/dispatch, before an event commits. A valid event's trace
//     transition is staged under the identity of the exact record; it is
//     applied only when that same record reaches the plugin's session/event
//     listener after the commit (staging). A later veto therefore leaves
//     the trace untouched.
//   - Request rules (request-reconstruction, request-header,
//     orphaned-tool-result) run on llm/stream in a listener registered with
//     Prepend, so a short-circuiting listener cannot skip it. Only
//     loop-built requests are checked. The expected messages come from a
//     fresh fold of the records before the in-flight step's step/start,
//     sharing no surface or fold cache with the live session.
//   - status-transition checks agent/status.
//   - request-digest is checked by [Verify], offline, over stored logs,
//     with the same rule code as the runtime plugin.
//
// Modes: "strict" (the default) refuses with an [*InvariantError] whose
// Code is "INVARIANT"; "warn" emits an invariant/violation event and an
// hclog warning and refuses nothing; "off" registers no listener at all.
package invariants
