// Package pgstore is a [session.Store] on PostgreSQL, for many Vigil
// processes (on one machine or many) sharing sessions: one log per session
// in one database, appended to by whoever runs the session's current turn.
//
// # Storage
//
// A session is a row of vigil_sessions holding its canonical header line
// and its length (the seq its next event takes); each event is a row of
// vigil_events holding the event's canonical record bytes, keyed by
// (session, seq). Nothing is re-encoded on the way in or out: a log loaded
// from PostgreSQL is byte for byte the log the jsonl store would hold, so
// `vigil sessions export` gives the same file from either store.
//
// The tables are created, or migrated, when a [Store] opens: a
// vigil_schema table records the schema version, migrations run under an
// advisory lock so concurrent starts are safe, and a database migrated by a
// newer Vigil is refused with [ErrSchemaTooNew]. [WithSchema] keeps the
// tables in a PostgreSQL schema of their own; otherwise they live in the
// first schema of the connection's search_path.
//
// # Appends are optimistic by seq
//
// [Store.Append] appends a batch in one statement only if the session's
// length is the seq the writer expected; otherwise nothing is written and
// the error is [session.ErrConflict]. Time never decides: the log is
// ordered by seq alone, and the primary key makes a seq impossible to
// store twice. Two processes appending at the same seq: one wins, the
// other gets ErrConflict and must reload.
//
// Every append commits synchronously (the server's synchronous_commit,
// raised to 'local' where it is off), but a staged one (below), so an
// event row a follower ([Store.Follow]) reads up to the session's staged
// events is durable, and it yields what it reads at once. The store is a
// [session.Batcher]: a live session run under its lease does not hand
// it one event at a time but the events between two durability points
// (the points where the jsonl store fsyncs: a flush, as before a tool
// runs, and a short timer, shorter after a step's end), one append, one
// statement and one commit; what it has not handed over is its own,
// visible to nobody and reported durable to nobody. It is a
// [session.Stager]: a turn's first request, before the model is called,
// is staged, committed without waiting for the WAL's flush, so that a
// worker that dies or stops meanwhile leaves a turn to continue at no
// synchronous commit; the session's next append (or a [Store.Flush])
// makes it durable, and no follower is given it before (stage.go). The
// store is a
// [session.Deferrer] too: the last events of a turn run under a queue
// claim are written by the claim's Finish, in its statement, so that the
// turn's end, the job's outcome and the lease's release are one commit.
// A turn with one tool call makes three synchronous commits: the
// enqueue, the write before the tool runs, and the turn's end with the
// job's finish (the claim commits asynchronously: see the job queue).
// [WithDurableAppends] turns the batches off: a live session appends
// each event as it comes.
//
// # One turn at a time: the lease
//
// [Store.Lease] takes a session's turn lease, a row of vigil_leases with
// an expiry in the database's clock, renewed in the background while it
// is held. A second holder is refused with [ErrBusy] (naming the holder
// and when the lease expires) or, asked to wait, waits until the lease is
// released (a notification wakes it) or expires. A holder that crashed
// stops renewing; once its lease has expired the next one takes it over,
// and opening the session then repairs the interrupted turn.
//
// While a lease is live, appends from any other holder are refused with
// ErrBusy: a process that opens a session without the lease cannot
// "repair" a turn that is in fact still running. (The check and the
// append are one statement, but under READ COMMITTED a lease taken while
// such an append is in flight may not stop it; the seq check still does,
// since the lease holder loads the log after taking the lease.)
// [live.OpenLeased] (package session/live) is the whole protocol for a
// caller that runs turns; its Example runs it on the JSONL store, whose
// lease is a file lock (this package has no runnable Examples: they
// would need a server).
//
// # Fencing: every lease has an epoch
//
// A session row carries an epoch, moved up by one in the statement that
// takes a lease (by [Store.Lease] or a queue claim), and the holder name
// of that lease (holder#seq: unique to one lease); the lease remembers
// both. While a store holds a session's lease, its appends are made under
// that epoch ([Store.AppendFenced] names one explicitly): the append
// statement itself compares the epoch and the name with the session's,
// on the locked row, and refuses with [session.ErrFenced] once another
// lease was taken. The name matters when a claim was lost in a database
// crash (below): the next lease then takes the same epoch number.
// A holder paused or cut off past its lease's expiry therefore never
// appends again, not even after the next holder released. A lease whose
// renewal found it taken stays held, and fencing, until its holder
// releases it; it never turns into an append without a lease.
//
// # The job queue
//
// [Store] is a [session.Queue]: [Store.Enqueue] adds a row to vigil_jobs
// and notifies; [Store.Claim] takes, in one statement, the oldest job
// of a session nobody holds the lease of (SELECT … FOR UPDATE SKIP LOCKED,
// so claimers in any number of processes do not wait on each other),
// the session's lease (a new epoch) and marks the job running under it.
// The claim's lease is the store's own, renewed and fencing the store's
// appends like any. The claim commits without waiting for the WAL's
// flush: whatever depends on it durably is written by a later
// synchronous commit, which flushes the WAL past it. A database that
// crashes before then loses the claim, the session's epoch goes back, and
// the next claim takes the same epoch number under another holder name;
// the job's row keeps the name as the session's does, and every write
// under the lost claim (an append, the job's start, finish or release)
// compares it too, so its holder is fenced.
//
// A session's next job goes to the store that held it last, which likely
// keeps it open, parked (package session/live), and runs the job without
// reloading the log: the holder name of the claim's lease says which
// store that was (holder#cN: the store's name, before the '#'; a lease
// taken otherwise, as the API's to create a session, gives no store the
// next job), the enqueue's notification names it and
// wakes that store's claim at once, and for a grace (200 ms) from its
// enqueue no other store may claim the job. Then it is anyone's (the
// other stores' claims are woken for it then, once for all such jobs),
// and the oldest job goes first: a store busy or dead delays its
// sessions' jobs by the grace at most, and never starves them. A claim
// that leaves another job claimable wakes the next waiting claim, so
// jobs whose grace ends together are all taken at once. The job of a
// session no claim held yet (nobody, or the API's lease that created
// it) is anyone's at once; while jobs finish often, its notification
// names the holder of the job that finished last, so that one store's
// claim looks for it at once rather than every store's (the others look
// once the grace is over). A waiting Claim listens for enqueues and
// releases, and looks again when the soonest lease on a session with
// jobs expires (read by a look that found nothing, and shared by the
// store's looks for a second); a Claim that comes when nothing was
// notified to its store since one of its claims found no job (a worker
// claims again as each job ends), or, while another of its claims
// looks, since the latest look began, does not look, but waits as one.
// A dead worker's job stays 'running' and is claimed again once its
// lease is gone, its Base and Attempts kept. [Store.Cancel] deletes the
// queued jobs and marks the running one, whose claim, in whatever
// process, is watching for that notification
// ([session.Claim.Cancelled]). A job that ends (finished, or dropped
// cancelled) moves to vigil_jobs_done with its outcome, for
// [Store.Job], and is deleted from there after session.FinishedJobTTL.
// A unique index on (session_id, call) makes a second unfinished
// decision on a call a refused insert.
//
// # Following a log
//
// Every append but a staged one notifies (NOTIFY) the events channel of
// the store's schema with the session id and its new length, at its
// commit and in its statement: one
// notification per commit, riding a commit the turn makes anyway (a
// claim's Finish with deferred events adds the lease's release to it).
// PostgreSQL commits notifying transactions one at a time,
// database-wide, which is why a live session's batches matter: a turn
// makes a few such commits, not one per event. [Store.Follow] yields the
// events of one session as any process appends them. A store's followers
// share one LISTEN connection and read through the pool when woken, so a
// waiting follower holds no connection. A follower's read is not cut
// short when its client leaves: pgx closes a connection whose statement
// was interrupted, and the pool would pay for a new one.
//
// Jobs enqueued, leases released and jobs cancelled are notified on the
// schema's jobs channel, which waiting claims, the cancel watchers of
// running claims and [Store.Lease] waits share a second LISTEN
// connection to, each woken by the notifications of its kind and looking
// for itself, on a pooled connection, what changed. Each connection is
// made by the first waiter of its channel, so a process LISTENs only to
// what it waits on: an API process that streams logs is not woken by the
// queue, nor a worker by every append (each notification costs every
// listening process a wake-up, and the server a delivery to each). A
// process holds at most two listening connections however many jobs it
// runs or waits for, and a claim opens none. When a connection drops it
// is made again, and then every waiter on it looks again, for what was
// notified while nobody listened.
//
// A follower whose read fails because the server went away (a restart, a
// failover) tries again, for up to a minute, and reads what was appended
// meanwhile, so its sequence has no gap and no repeat.
//
// # Losing the server
//
// Calls made while the database is unreachable fail; none waits for it.
// Pooled connections are checked (pinged) before reuse once they sat idle
// for a second or another connection was found broken, so that the calls
// after a restart do not fail on the connections it closed. The store's
// LISTEN connection connects again on its own, and then wakes every
// waiter to look again; a worker's Claim whose look fails returns the
// error and is called again (vigil's Runtime.Work pauses, then retries);
// a job whose turn the outage left open is claimed again once its lease
// has expired, and the turn, repaired, continued.
//
// # The ledger
//
// The store is a [session.Ledger]: vigil_ledger holds a session's tool
// results by idempotency key, one row each, inserted once (ON CONFLICT
// DO NOTHING) and committed synchronously whatever the server's
// synchronous_commit; a foreign key to vigil_sessions with ON DELETE
// CASCADE deletes a session's entries with its row.
package pgstore
