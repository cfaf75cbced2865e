// Package jsonl is the embedded default [session.Store]: one
// <session id>.jsonl file per session in a directory, in the public log
// format of package session (a header line, then one record per line).
//
// # Writers
//
// One writer per session: the first append (or the create or fork, or a
// [Store.Lease]) of a session takes an exclusive file lock (gofrs/flock)
// on its file and holds it until [Store.Release] or [Store.Close]. The
// holder records its pid, host and start time in <id>.lock next to the
// file while it holds the lock. Another Store, in this process or
// another, gets [session.ErrLocked], naming the holder, when it tries to
// write the same session; [Store.Lease] with wait waits for the lock
// instead (vigil run --wait), so a turn that is still running is never
// taken for an interrupted one. Readers (Load, List) take no lock. When a
// writer takes over an existing file it validates it and cuts off a torn
// last line (a write interrupted by a crash) before it appends anything.
//
// The directory is created by the first create or fork: a store only
// read (List, Load) leaves none behind. Opening a store removes the
// temporary files (.<id>.<n>.tmp) that a
// crash during a create or fork left behind, once no create holds them.
//
// # Group commit and durability
//
// Appends are buffered in memory and written with one write and one fsync
// per group: immediately when a batch holds a step/end, turn/end or
// session/end-seed record (the append returns after the fsync), and
// otherwise when the sync interval (default 10ms) after the first
// unwritten append expires. [Store.Flush] writes and fsyncs at once.
//
// The durability contract: an event is durable once Flush returned, or
// once the append of the step/end or turn/end that closes its step
// returned (or, for an event outside any step, the next such append). An
// event appended less than the sync interval before a crash may be lost;
// a crash in the middle of a write leaves at most a torn last line, which
// loading drops. Create and Fork write the new file under a temporary
// name, fsync it and link it into place, so a new log is never seen half
// written.
//
// A failed write or fsync breaks the session's writer: every later append
// and flush of that session returns the error, until the session is
// released and taken over again (which repairs the file).
package jsonl
