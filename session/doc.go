// Package session is the log model of the event-sourced conversation: an
// append-only, immutable log of events per session, its on-disk format,
// the pure fold that derives the messages a model is shown, the header
// fold, crash repair and the [Store] interface. It needs nothing of the
// bus: a tool that reads logs, a store and an out-of-process plugin link
// it alone. The live session on the bus (appends dispatched to plugins,
// the manager that opens, forks and seeds sessions) is package
// session/live, built on [LogState].
//
// # Records
//
// A log is a list of [Record]s. Appending a candidate [Event] assigns its
// seq (its index in the log) and time, and encodes it once to its
// canonical JSON line ([NewRecord], [LogState.Stage]); the record is those
// bytes (and the payload decoded from them once), and nothing a caller
// holds can change it. Records are shared freely: between sessions (a fork inherits its
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
// # Structure
//
// The structural rules (seq order, known types, turn and step fields,
// replace validity) are this package's: [NewRecord] checks a record alone,
// [Validate] and [LogState] a log, and every way a log is made (append,
// seed, fork, load) goes through them. Turn and step nesting are the
// invariants plugin's.
//
// # Fold
//
// The surface is the ordered list of surface events (user/message,
// assistant/message, tool/result); a replace splices a range of it.
// [DeriveMessages] projects it to [Message]s, one pure projection per
// event; [Fold] and [LogState.Messages] are the same fold, memoized
// incrementally ([LogState] keeps the surface and projects it when
// asked; [Project] is the per-record projection for a fold of one's own).
// A loaded log holds each record's line once (a slice of the file's
// bytes with [DecodeOwned]), reads each payload in place (a string
// without escapes points into the line), and decodes the payload of a
// record that is not on the surface, a header or an approval again when
// asked; a reader of every payload reads them in the decoder's pass
// ([DecodeOwnedEach], [LoadEach]).
// [DeriveHeader] gives the latest request header, and [RequestDigest] the
// digest of a request that request/digest events record.
//
// # Stores and durability
//
// A [Store] persists logs; session/jsonl (one file per session),
// session/memory and session/pgstore implement it, and
// session/sessiontest is the suite they pass. [Closers] is the crash
// repair rule: the events that close a turn a crash left open, appended
// when a log is opened. A step suspended on approvals ([Suspended]: every
// call without a result has an approval/request) is not a crash and is
// left open; the approval engine, session/approval, makes the
// approval/decision that answers one of its calls. An event is durable once the store's [Flusher]
// returned for it; a live session flushes when a step or turn ends.
package session
