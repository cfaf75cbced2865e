// Package session is the event-sourced conversation: an append-only,
// immutable log of events per session, and the pure fold that derives the
// messages a model is shown.
//
// # Records
//
// A [Session] is a log of [Record]s. [Session.Append] takes a candidate
// [Event], assigns its seq (its index in the log) and time, and encodes
// it once to its canonical JSON line; the record is those bytes (and the
// payload decoded from them once), and nothing a caller holds can change
// it. Records are shared freely: between sessions (a fork inherits its
// parent's), stores and readers.
//
// The format is public; [Decode] reads it and [Record.AppendLine] and
// [AppendHeaderLine] write it. Line 1 of a log is the header
//
//	{"type":"session","version":1,"id":"01JD…","created":"2026-11-29T20:21:24.000Z","parent":{"id":"01JC…","seq":41}}
//
// and every further line one record, fields in this order:
//
//	{"seq":7,"type":"assistant/chunk","time":"2026-11-29T20:21:25.120Z","turn":2,"step":1,"data":{"text":"Hel"}}
//
// with "surface" ({"op":"replace","start":S,"end":E}; absent means append),
// "sources" and "ignorable" after "step" when present. Times are RFC 3339
// in UTC with milliseconds. The decoder is as strict as the encoder: it
// reads a line only if it is exactly what the encoder writes for the
// record it holds (keys spelled and ordered so, each once, data always
// present, zero fields omitted, no white space, core payloads as
// [NewRecord] encodes them), so what any store exports, any store
// imports, byte for byte. The core types
// ([TypeTurnStart] … [TypeEndSeed]) have payload structs in this package;
// plugin-owned types are allowed when marked ignorable or registered with
// [RegisterType].
//
// # Append
//
// An append is a two-phase dispatch of [Committed] on the bus: the veto
// phase ([bus.Veto] listeners, such as the invariants plugin) may refuse
// the record, and then nothing is committed; after the commit, Committed
// listeners observe the same *[Commit], and their failures are only
// logged. Structural rules (seq order, known types, turn and step fields,
// replace validity) are checked by the session itself, for appends, seeds,
// forks and loads alike; turn and step nesting are the invariants
// plugin's.
//
// # Fold
//
// The surface is the ordered list of surface events (user/message,
// assistant/message, tool/result); a replace splices a range of it.
// [DeriveMessages] projects it to [Message]s, one pure projection per
// event; [Session.Messages] is the same fold, memoized incrementally.
// [DeriveHeader] gives the latest request header, and [RequestDigest] the
// digest of a request that request/digest events record.
//
// # Stores and durability
//
// A [Store] persists logs; session/jsonl (one file per session) and
// session/memory implement it, and session/sessiontest is the suite they
// pass. A [Manager] creates, opens (repairing crash damage, see
// [Closers]), forks and seeds sessions over a store and emits [Created].
// An event is durable once [Session.Flush], or the append of the step/end
// or turn/end that closes it, returned.
package session
