// Package jsonl is the embedded default [session.Store]: one
// <session id>.jsonl file per session in a directory, in the public log
// format of package session (a header line, then one record per line).
//
// # Writers
//
// One writer per session, holding an exclusive lock (flock(2), as
// gofrs/flock takes it) on the session's file, on the descriptor it
// writes with: a writer holds one descriptor, and only from the first
// append of a turn to the end of the turn or its suspension on an
// approval (then it closes the file, once what was appended is durable),
// or from a [Store.Lease] to its release. A loaded or idle session holds
// no descriptor. The holder records its pid, host and start time in
// <id>.lock next to the file while it holds the lock. Another Store, in
// this process or another, gets [session.ErrLocked], naming the holder,
// when it tries to write the same session while it is held;
// [Store.Lease] with wait waits for the lock instead (vigil run --wait),
// so a turn that is still running is never taken for an interrupted one.
// Readers (Load, List) take no lock.
//
// A writer keeps the file's length and next seq between holds (a load
// hands it what it read), so taking the lock again compares the file's
// size with that length and reads only what another writer appended
// meanwhile — nothing after a load. A writer that knows nothing of a
// file validates it whole; either way a torn last line (a write
// interrupted by a crash) is cut off before it appends anything.
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
// loading drops. A follower ([Store.Follow]) is given a record only once
// it is durable: a writer writes nothing without its fsync, wakes
// followers after it, and a follower in its process reads only up to
// what it fsynced. (A follower in another process reads the file as it
// is: it may see a record between its write and its fsync, which a crash
// of the machine, not of the writing process, can lose.) Create and Fork write the new file under a temporary
// name, fsync it and link it into place, so a new log is never seen half
// written.
//
// A failed write or fsync breaks the session's writer: every later append
// and flush of that session returns the error, until the session is
// released and taken over again (which repairs the file).
//
// # The job queue
//
// The store is a [session.Queue] (what vigil serve accepts turns into),
// kept in the directory's .queue folder, made by the first enqueue: an
// append-only journal of queue changes (enqueue, claim, start, release,
// finish, drop, cancel: one JSON line each), written and fsynced under an
// exclusive file lock (.queue/lock) so that every process sharing the
// directory shares one queue, and replayed by each store into memory,
// incrementally (only the lines past the last it read). A journal rather
// than a file per job: a change is one append and one fsync of one file
// (no directory fsync per job), and a claim chooses among the jobs in
// memory instead of reading a directory of files. It cannot grow forever:
// once it is more than four times the lines its jobs need (and past a
// thousand lines), a change rewrites it as one line per job it keeps —
// the unfinished ones, and the finished ones within their retention
// (session.FinishedJobTTL, at most session.FinishedJobLimit), with their
// outcome — (a temporary file, fsynced, renamed over it); the other stores
// notice the new file and replay it whole. A line torn by a crash is never
// read, and is cut off by the next change.
//
// A claim takes the session's writer, exactly as [Store.Lease] does: a
// session that another process writes (vigil run) keeps its jobs queued
// until it is released, and a job's appends are its claimer's. Finish and
// Release release the writer. Each store that claims holds a lock on its
// own owner file (.queue/owners/<token>) while it is open; a job whose
// claimer's owner file is no longer locked (its process died, or it was
// closed) is claimed again, with its Base and Attempts. A job cancelled
// while it ran is dropped when its claim ends, however it ends.
//
// Claims waiting in this process are woken at once by queue changes and
// released writers of any store open on the directory in this process;
// what other processes do is seen by polling the journal every 250ms,
// which is also how a [session.Claim.Cancelled] of a claim here learns of
// a Cancel made in another process.
//
// # Following
//
// [Store.Follow] streams a log as it grows, reading only the bytes past the
// last whole line it read. Appends through a store of this process wake
// it at once; other processes' appends are seen by polling every 250ms.
//
// # The ledger
//
// The store is a [session.Ledger]: a session's tool results by
// idempotency key are kept in <id>.ledger beside its log ([Store.LedgerPath];
// the file's format is in ledger.go), fsynced before Record returns, bound
// to the log by the header's created time. Deleting a session deletes
// <id>.ledger with <id>.jsonl.
package jsonl
