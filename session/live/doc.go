// Package live is the session on the bus: a log (a [session.LogState])
// that plugins see being appended to, and the [Manager] that makes such
// sessions available over a [session.Store].
//
// # Append
//
// [Session.Append] is a two-phase dispatch of [Committed]: the veto phase
// ([bus.Veto] listeners, such as the invariants plugin) may refuse the
// record, and then nothing is committed; the store appends it; after the
// commit, Committed listeners observe the same [Commit], and their
// failures are only logged. The structural rules are package session's
// and are checked before the veto phase.
//
// # Manager
//
// A [Manager] creates, opens (repairing crash damage with
// [session.Closers]), forks and seeds sessions over a store and emits
// [Created] for each; it is provided as the [Sessions] service by every
// store plugin, and [OpenLeased] is how a caller that runs turns opens a
// session under the store's lease. An event is durable once
// [Session.Flush], or the append of the step/end or turn/end that closes
// it, returned.
package live
