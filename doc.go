// Package vigil embeds the Vigil runtime in a Go program: open a
// composition of plugins, run turns on sessions, list, load and fork
// sessions, close.
//
//	rt, err := vigil.Open(ctx, vigil.File("plugins.yaml"))
//	if err != nil { ... }
//	defer rt.Close()
//	for chunk, err := range rt.Run(ctx, "", "What is in this folder?") {
//		if err != nil { ... }
//		fmt.Print(chunk.Text)
//	}
//
// A composition comes from a plugins.yaml ([File]) or from Go values
// ([Compose] of [Plugin] entries: the same names and config structs, no
// YAML). Either way plugins are found by their registered names, so a
// program links the plugins it uses by importing their packages, as
// cmd/vigil links every built-in one with
//
//	import _ "github.com/vigil-run/vigil/plugins"
//
// This package imports only the core (bus, session, agentloop,
// invariants, config): importing it alone links no provider SDK and no
// database driver.
//
// # Turns
//
// [Runtime.Turn] runs one turn on a session (a new one when the id is
// empty) with a callback for the streamed chunks and returns the turn's
// result; [Runtime.Run] is the same turn as an iterator of chunks. A
// turn opens its session under the store's lease (store/jsonl's file
// lock, store/postgres's lease), so one turn at a time runs on a session
// across processes, and one at a time in this runtime: a second is
// refused with [ErrBusy] unless it asks to wait. A session id the store
// does not hold is [ErrNotFound].
//
// A turn a crash interrupted is carried on with [TurnOptions].Continue:
// no new prompt, the model is asked again from the log, which shows the
// interrupted tool calls' outcomes.
//
// # Approvals
//
// With a policy that asks (the approvals plugin, or a plugin's veto), a
// turn that reaches such a tool call is suspended: Turn returns
// [ErrSuspended] and the calls in the result's Pending. The session waits
// in its store, across restarts, until [Runtime.Decide] logs a decision
// for each call, in this process or any other; the last one resumes the
// turn where it is given. [Runtime.Pending] says what a session waits
// for, and [Runtime.Resume] carries on a step whose calls were all
// decided by a process that ended before it went on.
//
// A Runtime is safe for concurrent use; turns on different sessions run
// concurrently.
package vigil
