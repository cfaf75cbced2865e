package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-run/vigil/session"
)

// queuePoll bounds how long a waiting [Store.Claim] or a running claim's
// watcher goes without looking at the queue: notifications wake them at
// once, this is only the safety net should one go missing. (A variable
// for the tests that prove the notifications work without it.)
var queuePoll = 5 * time.Second

// jobID renders a job's key so that ids sort as the jobs were enqueued.
func jobID(n int64) string { return fmt.Sprintf("%016d", n) }

// retireSQL is a statement's tail that moves the rows of vigil_jobs its
// CTE d deleted (RETURNING *) to vigil_jobs_done, finished with the
// outcome of the parameters $s (state), $s+1 (error code), $s+2 (error
// message), $s+3 (reason) and $s+4 (checkpoint), and drops the finished jobs past their
// retention: CTEs r (one row per job moved) and p, for the statement's
// SELECT to follow.
func retireSQL(s int) string {
	return moveSQL(s) + fmt.Sprintf(`, p AS (
		DELETE FROM vigil_jobs_done WHERE finished < clock_timestamp() - make_interval(secs => %d)
	)`, int64(session.FinishedJobTTL/time.Second))
}

// moveSQL is retireSQL without the drop of the finished jobs past their
// retention (CTE r only), for a statement that runs far more often than
// jobs finish.
func moveSQL(s int) string {
	return fmt.Sprintf(`, r AS (
		INSERT INTO vigil_jobs_done (id, session_id, kind, call, input, enqueued, started, finished, base, attempts, worker,
			state, error_code, error_message, reason, checkpoint)
		SELECT id, session_id, kind, call, input, enqueued, started, clock_timestamp(), base, attempts, worker,
			$%d::text, $%d::text, $%d::text, $%d::text, $%d::text FROM d
		RETURNING 1
	)`, s, s+1, s+2, s+3, s+4)
}

// outcomeArgs are the parameters of retireSQL for o.
func outcomeArgs(o session.Outcome) []any {
	var code, msg, reason, checkpoint *string
	if o.Error != nil {
		code, msg = &o.Error.Code, &o.Error.Message
	}
	if o.Reason != "" {
		reason = &o.Reason
	}
	if o.Checkpoint != "" {
		checkpoint = &o.Checkpoint
	}
	return []any{string(o.State), code, msg, reason, checkpoint}
}

var cancelledArgs = outcomeArgs(session.Outcome{State: session.JobCancelled})

// Enqueue implements [session.Queue]: the job is a row of vigil_jobs, and
// every process's waiting claims are woken (NOTIFY), the session's last
// holder's at once, the others' once the job is theirs too (see
// claimableSQL and fan.wake). A session nobody held yet is anyone's at
// once; while jobs finish often, only one process is woken at once for
// it (wakeFor).
func (s *Store) Enqueue(ctx context.Context, job session.Job) (session.Job, int, error) {
	if err := checkID(job.Session); err != nil {
		return session.Job{}, 0, session.StoreError("pgstore", "enqueue", "", err)
	}
	input := job.Input
	if input == nil {
		input = []byte{}
	}
	var call *string
	if job.Call != "" {
		call = &job.Call
	}
	var id, ahead, notified int64
	var enqueued time.Time
	// A job for a call that an unfinished job has is refused by the
	// unique index (DO NOTHING: no row), one that a job finished done has
	// by the NOT EXISTS.
	err := s.queryRow(ctx, []any{&id, &enqueued, &ahead, &notified}, `WITH ins AS (
		INSERT INTO vigil_jobs (session_id, kind, input, enqueued, call)
		SELECT id, $2, $3, clock_timestamp(), $5 FROM vigil_sessions WHERE id = $1
		  AND NOT EXISTS (SELECT 1 FROM vigil_jobs_done d WHERE d.session_id = $1 AND d.call = $5 AND d.state = 'done')
		ON CONFLICT (session_id, call) WHERE call IS NOT NULL DO NOTHING
		RETURNING id, enqueued
	), n AS (
		SELECT pg_notify($4, 'q ' || `+notifiedHolder(wakeFor)+` || ' ' || $1) FROM ins
	)
	SELECT ins.id, ins.enqueued, (SELECT count(*) FROM vigil_jobs j WHERE j.session_id = $1), (SELECT count(*) FROM n)
	FROM ins`, job.Session, job.Kind, input, s.jobsChannel, call, finishedLately.Milliseconds())
	if errors.Is(err, pgx.ErrNoRows) {
		err = session.ErrNotFound
		if call != nil {
			var found bool
			if qerr := s.queryRow(ctx, []any{&found}, `SELECT EXISTS (SELECT 1 FROM vigil_sessions WHERE id = $1)`, job.Session); qerr != nil {
				err = qerr
			} else if found {
				err = fmt.Errorf("call %s: %w", job.Call, session.ErrDuplicateJob)
			}
		}
		return session.Job{}, 0, session.StoreError("pgstore", "enqueue", job.Session, err)
	}
	if err != nil {
		return session.Job{}, 0, session.StoreError("pgstore", "enqueue", job.Session, err)
	}
	out := session.Job{ID: jobID(id), Session: job.Session, Kind: job.Kind, Call: job.Call, Input: append([]byte(nil), input...),
		Enqueued: enqueued, Base: -1, State: session.JobQueued}
	return out, int(ahead), nil
}

// Jobs implements [session.Queue]. A job is running while the lease of
// its latest claim is live; a job whose worker died is queued again.
func (s *Store) Jobs(ctx context.Context, id string) ([]session.Job, error) {
	if err := checkID(id); err != nil {
		return nil, session.StoreError("pgstore", "jobs", "", err)
	}
	var out []session.Job
	err := s.pool.with(ctx, func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, `SELECT j.id, j.kind, j.input, j.enqueued, j.base, j.attempts,
			coalesce(j.state = 'running' AND j.epoch = s.epoch AND l.session_id IS NOT NULL, false), j.worker, j.call, j.started
		FROM vigil_sessions s
		LEFT JOIN vigil_jobs j ON j.session_id = s.id
		LEFT JOIN vigil_leases l ON l.session_id = s.id AND l.expires > clock_timestamp()
		WHERE s.id = $1 ORDER BY j.id`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		found := false
		for rows.Next() {
			found = true
			var jid *int64
			var kind, worker *string
			var input []byte
			var enqueued *time.Time
			var base *int64
			var attempts *int
			var running bool
			var call *string
			var started *time.Time
			if err := rows.Scan(&jid, &kind, &input, &enqueued, &base, &attempts, &running, &worker, &call, &started); err != nil {
				return err
			}
			if jid == nil {
				continue // the session has no jobs
			}
			j := session.Job{ID: jobID(*jid), Session: id, Kind: *kind, Input: input, Enqueued: *enqueued,
				Base: *base, Attempts: *attempts, State: session.JobQueued, Call: deref(call), Started: deref(started)}
			if running {
				j.State, j.Worker = session.JobRunning, *worker
			} else if worker != nil {
				j.Worker = *worker
			}
			out = append(out, j)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !found {
			return session.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return nil, session.StoreError("pgstore", "jobs", id, err)
	}
	return out, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Job implements [session.Queue]: an unfinished job is a row of
// vigil_jobs (running while its claim's lease is live), a finished one a
// row of vigil_jobs_done.
func (s *Store) Job(ctx context.Context, id string) (session.Job, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return session.Job{}, fmt.Errorf("pgstore: job %q: %w", id, session.ErrNotFound)
	}
	var j session.Job
	var call, worker, code, msg, reason, checkpoint *string
	var started, finished *time.Time
	var state string
	var running bool
	err = s.queryRow(ctx, []any{&j.Session, &j.Kind, &call, &j.Input, &j.Enqueued, &started, &finished, &j.Base, &j.Attempts,
		&worker, &state, &running, &code, &msg, &reason, &checkpoint}, `
	SELECT j.session_id, j.kind, j.call, j.input, j.enqueued, j.started, NULL::timestamptz, j.base, j.attempts, j.worker, j.state,
		coalesce(j.state = 'running' AND j.epoch = s.epoch AND EXISTS (
			SELECT 1 FROM vigil_leases l WHERE l.session_id = s.id AND l.expires > clock_timestamp()), false),
		NULL, NULL, NULL, NULL
	FROM vigil_jobs j LEFT JOIN vigil_sessions s ON s.id = j.session_id WHERE j.id = $1
	UNION ALL
	SELECT session_id, kind, call, input, enqueued, started, finished, base, attempts, worker, state, false,
		error_code, error_message, reason, checkpoint
	FROM vigil_jobs_done WHERE id = $1`, n)
	if errors.Is(err, pgx.ErrNoRows) {
		err = session.ErrNotFound
	}
	if err != nil {
		return session.Job{}, fmt.Errorf("pgstore: job %s: %w", id, err)
	}
	j.ID, j.Call, j.Started, j.Finished, j.Worker = jobID(n), deref(call), deref(started), deref(finished), deref(worker)
	switch {
	case finished != nil:
		j.State = session.JobState(state)
		j.Outcome = session.Outcome{State: j.State, Reason: deref(reason), Checkpoint: deref(checkpoint)}
		if code != nil || msg != nil {
			j.Outcome.Error = &session.JobError{Code: deref(code), Message: deref(msg)}
		}
	case running:
		j.State = session.JobRunning
	default:
		j.State = session.JobQueued
	}
	return j, nil
}

// finishedLately is how recent the last finished job must be for the
// job of a session nobody held to be notified for its holder (see
// wakeFor): while jobs finish this often, that holder's process is
// likely back to waiting.
const finishedLately = 200 * time.Millisecond

// affinityGrace is how long a job stays its session's last holder's
// (see claimableSQL) before any store may claim it. (A variable for the
// tests.)
var affinityGrace = 200 * time.Millisecond

// claimableSQL picks the oldest job that may run now: the oldest of its
// session's, which nobody holds the lease of (a job whose worker died is
// still 'running', and claimable once that worker's lease has expired).
// Jobs other claimers are taking are skipped, not waited for.
//
// A job of a session another store held last (its holder name does not
// start with $9, this store's name and '#') is left to that store for
// $10 ms from its enqueue: that store likely keeps the session open,
// parked (package session/live), and runs the job without reloading the
// log, where this one would open it cold. Past that, or for a session
// nobody held, the job is anyone's, and the oldest goes first: a store
// busy or dead delays its sessions' jobs by $10 ms at most, and never
// starves them.
const claimableSQL = `SELECT j.id, j.session_id, j.cancelled ` + claimableJobs + `
ORDER BY j.id LIMIT 1
FOR UPDATE OF j SKIP LOCKED`

// claimableJobs are the jobs claimableSQL picks from (j), before the
// skip of those other claimers are taking. Only a claim's lease (its
// holder name ends '#c' and a number: see newToken) gives a store the
// session's next job: a store that took the lease otherwise, to create
// a session or run a turn directly, may claim no jobs at all.
const claimableJobs = `FROM vigil_jobs j JOIN vigil_sessions s ON s.id = j.session_id
WHERE NOT EXISTS (SELECT 1 FROM vigil_jobs o WHERE o.session_id = j.session_id AND o.id < j.id)
  AND NOT EXISTS (SELECT 1 FROM vigil_leases l WHERE l.session_id = j.session_id AND l.expires > clock_timestamp())
  AND (s.holder IS NULL OR s.holder !~ ` + claimLease + ` OR starts_with(s.holder, $9::text)
       OR j.enqueued <= clock_timestamp() - $10 * interval '1 millisecond')`

// claimSQL is a claim in one statement, committed asynchronously (see
// tryClaim): the claimable job locked (CTE c, skipping the jobs other
// claimers have locked, so claimers wait on each other nowhere), its
// session's lease taken for holder $1 for $2 ms if it is free or expired
// and the session moved to the next epoch under that holder
// (takeLeaseCTEs: l, e), and the job marked running under them for
// worker $3 (u); or, for a job cancelled while its worker was away, the
// job retired with the outcome $4..$8 (d, r). $9 and $10 are
// claimableSQL's. One row when a job was found (and locked: the
// statement wrote), none when none was; the row's last column says
// whether another job is claimable (then another claim is woken).
var claimSQL = asyncTag + `WITH c AS MATERIALIZED (` + claimableSQL + `),
cfg AS (SELECT set_config('synchronous_commit', 'off', true) AS v),
` + takeLeaseCTEs(`SELECT s.id FROM c JOIN vigil_sessions s ON s.id = c.session_id WHERE NOT c.cancelled`, 1, 2) + `,
u AS (
	UPDATE vigil_jobs j SET state = 'running', worker = $3, epoch = e.epoch, holder = $1, attempts = j.attempts + 1
	FROM c, e WHERE j.id = c.id
	RETURNING j.kind, j.input, j.enqueued, j.base, j.attempts
),
d AS (
	DELETE FROM vigil_jobs j USING c WHERE j.id = c.id AND c.cancelled RETURNING j.*
)` + moveSQL(4) + `
SELECT c.id, c.session_id, e.epoch, u.kind, u.input, u.enqueued, u.base, u.attempts, (SELECT count(*) FROM r), cfg.v,
	EXISTS (SELECT 1 ` + claimableJobs + ` AND j.id <> c.id)
FROM cfg, c LEFT JOIN e ON true LEFT JOIN u ON true`

// soonestSQL is how many seconds until the soonest live lease on a
// session with jobs expires; NULL when there is none. Expired leases are
// left out: their sessions' jobs were claimable, so another claimer has
// them in hand, and its finish or release will notify.
const soonestSQL = `SELECT extract(epoch FROM min(l.expires) - clock_timestamp())::float8
FROM vigil_leases l WHERE l.expires > clock_timestamp()
  AND EXISTS (SELECT 1 FROM vigil_jobs j WHERE j.session_id = l.session_id)`

// Claim implements [session.Queue]. It waits for the store's shared
// LISTEN connection (see fan) to tell of an enqueued job or a released
// lease, and looks again when the soonest lease on a session with jobs
// expires (a dead worker's); it holds a pooled connection only while it
// looks, so any number of claims wait on no connection of their own. The
// claim's cancel watcher listens the same way. Claim also returns when
// the store is closed; a failed query is an error (call Claim again,
// after a pause).
func (s *Store) Claim(ctx context.Context, worker string) (session.Claim, error) {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.bg, cancel)
	defer stop()
	fail := func(err error) (session.Claim, error) {
		switch {
		case s.bg.Err() != nil:
			err = errPoolClosed
		case parent.Err() != nil:
			err = parent.Err()
		}
		return nil, session.StoreError("pgstore", "claim", "", err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	// Subscribed before the first look, so that nothing enqueued or
	// released after it goes unnoticed.
	wake, unsubscribe, err := s.subscribe(topic{'q', ""})
	if err != nil {
		return fail(err)
	}
	defer unsubscribe()
	// Any cancel from before the claim commits on, so that the claim's
	// watcher need not look at its job at once (see watch).
	cancels, unsubscribeCancels, err := s.subscribe(topic{'c', ""})
	if err != nil {
		return fail(err)
	}
	defer unsubscribeCancels()
	for {
		c, wait, err := s.tryClaim(ctx, worker)
		if err != nil {
			return fail(err)
		}
		if c != nil {
			if !s.watch(c, cancels) {
				// The store closed as the claim committed: hand it back.
				_ = c.Release(context.WithoutCancel(ctx))
				return fail(errPoolClosed)
			}
			return c, nil
		}
		if err := s.sleep(ctx, wake, min(wait, queuePoll)); err != nil {
			return fail(err)
		}
	}
}

// sleep returns after d, or once wake receives; or with ctx's error, or
// errPoolClosed once the store is closed.
func (s *Store) sleep(ctx context.Context, wake <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.bg.Done():
		return errPoolClosed
	case <-wake:
	case <-t.C:
	}
	return nil
}

// tryClaim claims a job if one may run now, in one statement
// (claimSQL): it locks the job, takes its session's lease (moving the
// epoch) and marks the job running under that epoch. Otherwise it returns
// how long until the soonest lease on a session with jobs expires
// (queuePoll if none), or 0 when the queue changed under it all along.
//
// The claim commits without waiting for the WAL's flush. Nothing durable
// depends on it but through a later synchronous commit, which flushes the
// WAL past it: the job's first append, the write before a tool runs, the
// turn's end with the job's finish. A database that crashes before then
// (a clean stop checkpoints) loses the claim: the lease, the job's row,
// and the session's epoch go back, and the next claim takes the same
// epoch number. Its lease has another holder name, though (holder#seq,
// unique to one lease), which the session and job rows keep with the
// epoch, and every append and job update under a lease compares both: the
// lost claim's holder, back on a new connection, is fenced.
//
// A claim that comes when nothing may have changed since a claim of the
// store found no job does not look (see fan.mayFind): a worker claims
// again as each job ends, and with many worker processes each session's
// next job is mostly another's (see claimableSQL), so those looks would
// mostly find nothing, a statement each.
func (s *Store) tryClaim(ctx context.Context, worker string) (c *claim, wait time.Duration, err error) {
	s.mu.Lock()
	f := s.fans[jobsFan] // there: Claim subscribed
	s.mu.Unlock()
	news, look, wait := f.mayFind()
	if !look {
		return nil, wait, nil
	}
	defer func() { f.lookEnded(err != nil) }()
	for range 16 {
		token := s.newClaimToken()
		f.looks.Add(1)
		c, found, err := s.claimOnce(ctx, worker, token)
		if err != nil {
			return nil, 0, err
		}
		if c != nil {
			c.lease = s.hold(c.job.Session, token, c.epoch, true)
			return c, 0, nil
		}
		if found {
			// A cancelled job retired, or a lease taken since the
			// statement's snapshot: look again.
			continue
		}
		wait, err := s.untilExpiry(ctx, f)
		if err != nil {
			return nil, 0, err
		}
		f.foundNothing(news, wait)
		return nil, wait, nil
	}
	return nil, 0, nil // the queue changed under us all along; look again now
}

// expiryFresh is how long the soonest expiry a look read holds for the
// store's next looks (see untilExpiry). (A variable for the tests.)
var expiryFresh = time.Second

// untilExpiry is how long a look that found no job may wait without
// news: until just past the soonest expiry of a live lease on a session
// with jobs (a dead worker's lease frees its jobs without a notification),
// or queuePoll when there is none. The expiry is read at most once per
// expiryFresh: looks that find nothing come about as often as jobs end
// when many worker processes share the queue, and a read each would be a
// statement each. A look that goes by an earlier read waits no longer
// than that read's freshness, so a lease that became the soonest since
// is seen at most expiryFresh late.
func (s *Store) untilExpiry(ctx context.Context, f *fan) (time.Duration, error) {
	now := time.Now()
	if at, ok := f.knownExpiry(now); ok {
		return at.Sub(now), nil
	}
	var left *float64
	if err := s.queryRow(ctx, []any{&left}, soonestSQL); err != nil {
		return 0, err
	}
	wait := queuePoll
	if left != nil {
		// Just past the expiry, so that the lease is gone when we look.
		wait = max(time.Duration(*left*float64(time.Second)), 0) + 10*time.Millisecond
	}
	f.noteExpiry(now, now.Add(wait))
	return wait, nil
}

// claimOnce runs claimSQL once: the claim, or whether it found a job
// (then it is worth looking again at once).
func (s *Store) claimOnce(ctx context.Context, worker, token string) (*claim, bool, error) {
	var jid int64
	var sid string
	var epoch, base *int64
	var kind *string
	var input []byte
	var enqueued *time.Time
	var attempts *int
	var retired int64
	var cfg string
	var more bool
	err := s.queryRow(ctx, []any{&jid, &sid, &epoch, &kind, &input, &enqueued, &base, &attempts, &retired, &cfg, &more},
		claimSQL, append(append([]any{token, s.ttl.Milliseconds(), worker}, cancelledArgs...), s.holder+"#", affinityGrace.Milliseconds())...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil || epoch == nil || kind == nil {
		return nil, err == nil, err
	}
	if more {
		// Woken once for many jobs (see fan.claimer), or by one of many:
		// the next waiting claim looks too.
		s.wakeClaimer()
	}
	c := &claim{s: s, jid: jid, epoch: *epoch, token: token, cancelled: make(chan struct{})}
	c.job = session.Job{ID: jobID(jid), Session: sid, Kind: *kind, Input: input, Enqueued: *enqueued,
		Base: *base, Attempts: *attempts, State: session.JobRunning, Worker: worker}
	return c, true, nil
}

// claim is a job this store claimed.
type claim struct {
	s         *Store
	jid       int64
	epoch     int64
	token     string // the holder name of the claim's lease
	lease     *lease
	cancelled chan struct{} // closed by the watcher
	stop      context.CancelFunc
	watched   chan struct{} // closed when the watcher returns

	mu    sync.Mutex
	job   session.Job
	ended bool
}

// watch starts a goroutine that closes c.cancelled once the job is
// cancelled (or gone: a cancel dropped it while its worker was away),
// woken by the cancel's notification through the store's fan, until the
// claim ends. It looks at the job at once only if cancels, subscribed
// before the claim committed, got a notification (of any session's
// cancel): a cancel that came before its own subscription. It reports
// false, watching nothing, when the store is closing.
func (s *Store) watch(c *claim, cancels <-chan struct{}) bool {
	sid := c.job.Session
	ctx, stop := context.WithCancel(s.bg)
	c.stop, c.watched = stop, make(chan struct{})
	// Subscribed before the first look, as the claim commits, so that a
	// cancel from then on wakes the watcher.
	wake, unsubscribe, err := s.subscribe(topic{'c', sid})
	if err != nil {
		close(c.watched)
		return false
	}
	s.mu.Lock()
	if s.bg.Err() != nil {
		s.mu.Unlock()
		unsubscribe()
		close(c.watched)
		return false
	}
	s.watchers.Add(1)
	s.mu.Unlock()
	look := false
	select {
	case <-cancels:
		look = true
	default:
	}
	go func() {
		defer s.watchers.Done()
		defer close(c.watched)
		defer unsubscribe()
		if !look && s.sleep(ctx, wake, queuePoll) != nil {
			return
		}
		for {
			// Not cut short by the claim's end: a query cancelled in
			// flight costs its connection (pgx closes it), and the claim's
			// end is no reason to lose one. The store's close still ends it.
			qctx, qcancel := context.WithTimeout(s.bg, 10*time.Second)
			st, err := c.state(qctx)
			qcancel()
			pause := queuePoll
			switch {
			case ctx.Err() != nil:
				return
			case err == nil && st.superseded():
				return // claimed again by another: this claim is fenced, not cancelled
			case err == nil && (!st.job || st.cancelled):
				close(c.cancelled)
				return
			case err != nil:
				// The database is unreachable: look again soon, since a
				// cancel may come meanwhile (the fan wakes us too once it
				// listens again).
				s.log.Warn("watching a claimed job for cancellation failed; retrying", "session", sid, "error", err)
				pause = time.Second
			}
			if s.sleep(ctx, wake, pause) != nil {
				return
			}
		}
	}()
	return true
}

// fence is the fence of the claim's lease.
func (c *claim) fence() fence { return fence{c.epoch, c.token} }

// mine reports whether a job row's epoch and holder are this claim's.
func (c *claim) mine(epoch *int64, holder *string) bool {
	return epoch != nil && *epoch == c.epoch && holder != nil && *holder == c.token
}

func (c *claim) Job() session.Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.job
	j.Input = append([]byte(nil), j.Input...)
	return j
}

func (c *claim) Cancelled() <-chan struct{} { return c.cancelled }

// Start implements [session.Claim]: a job cancelled meanwhile is
// [session.ErrJobDone], one claimed again by another worker (this claim's
// lease was lost) [session.ErrFenced].
func (c *claim) Start(ctx context.Context, base int64) error {
	c.mu.Lock()
	ended := c.ended
	c.mu.Unlock()
	if ended {
		return fmt.Errorf("pgstore: start job %s: %w", jobID(c.jid), session.ErrJobDone)
	}
	var stored int64
	// Committed asynchronously: the base matters only once the job's
	// first append is durable, and that append's synchronous commit
	// flushes the WAL past this one. Lost in a crash, it is set again,
	// to the same length, by the next claim.
	err := c.s.queryRow(ctx, []any{&stored}, asyncTag+`UPDATE vigil_jobs SET base = CASE WHEN base < 0 THEN $3 ELSE base END,
			started = CASE WHEN base < 0 THEN clock_timestamp() ELSE started END
		FROM (SELECT set_config('synchronous_commit', 'off', true)) cfg
		WHERE id = $1 AND epoch = $2 AND holder = $4 AND NOT cancelled RETURNING base`, c.jid, c.epoch, base, c.token)
	if errors.Is(err, pgx.ErrNoRows) {
		err = c.gone(ctx)
	}
	if err != nil {
		return fmt.Errorf("pgstore: start job %s: %w", jobID(c.jid), err)
	}
	c.mu.Lock()
	c.job.Base = stored
	c.mu.Unlock()
	return nil
}

// jobState is what became of a claim's job: whether its row is there,
// cancelled, and whether the job row or, once it is gone, the session
// is still under the claim's lease.
type jobState struct {
	job, cancelled, mine bool
	// sessionMine: the session (if it still exists) is at the claim's
	// epoch and holder name: no lease was taken on it since.
	sessionMine bool
}

// superseded reports whether another claim took the job (or, the job
// finished, the session) since this one: the claim is fenced.
func (st jobState) superseded() bool {
	if st.job {
		return !st.mine
	}
	return !st.sessionMine
}

// state reads what became of the claim's job, in one statement.
func (c *claim) state(ctx context.Context) (jobState, error) {
	var st jobState
	var epoch, sepoch *int64
	var holder, sholder *string
	var cancelled *bool
	err := c.s.queryRow(ctx, []any{&cancelled, &epoch, &holder, &sepoch, &sholder},
		`SELECT j.cancelled, j.epoch, j.holder, s.epoch, s.holder FROM (SELECT 1) one
		LEFT JOIN vigil_jobs j ON j.id = $1 LEFT JOIN vigil_sessions s ON s.id = $2`, c.jid, c.job.Session)
	if err != nil {
		return st, err
	}
	st.job, st.cancelled, st.mine = cancelled != nil, cancelled != nil && *cancelled, c.mine(epoch, holder)
	st.sessionMine = sepoch == nil || c.mine(sepoch, sholder)
	return st, nil
}

// gone explains why the claim's job row could not be updated.
func (c *claim) gone(ctx context.Context) error {
	st, err := c.state(ctx)
	switch {
	case err != nil:
		return err
	case st.superseded():
		return fmt.Errorf("%w: the job was claimed again after this claim's lease (epoch %d) was lost", session.ErrFenced, c.epoch)
	case !st.job:
		return fmt.Errorf("%w: finished or cancelled", session.ErrJobDone)
	case st.cancelled:
		return fmt.Errorf("%w: cancelled", session.ErrJobDone)
	}
	return errors.New("the job changed concurrently")
}

// end runs fn, the claim's last word, once; then the lease is released,
// unless fn's statement released it (it reports so), and the watcher
// stopped.
func (c *claim) end(ctx context.Context, op string, fn func() (released bool, err error)) error {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return fmt.Errorf("pgstore: %s job %s: %w", op, jobID(c.jid), session.ErrJobDone)
	}
	c.ended = true
	c.mu.Unlock()
	// No renewal may find the lease gone once fn deleted it.
	c.lease.stopRenewing()
	released, err := fn()
	c.stop()
	<-c.watched
	c.lease.end(!released) // wakes the claims waiting for the session's next job
	if err != nil {
		return fmt.Errorf("pgstore: %s job %s: %w", op, jobID(c.jid), err)
	}
	return nil
}

// releaseKind is the SQL expression of the kind of a lease's release
// notification on session sid: 'r' when the session has jobs queued
// (other than job done, being finished), which claimers wait for, else
// 'l', which only the lease's waiters do (see fan.wake): a turn's end
// wakes no claimer of any process for nothing.
func releaseKind(sid, done string) string {
	return `CASE WHEN EXISTS (SELECT 1 FROM vigil_jobs rj WHERE rj.session_id = ` + sid + ` AND rj.id <> ` + done + `) THEN 'r' ELSE 'l' END`
}

// wakeFor is the SQL expression of the holder name a job of session $1
// is notified for: the session's last holder, whose process is woken at
// once (see fan.claimer) and likely has the session parked. A session
// nobody held is anyone's at once; while jobs finish often (one in the
// last $6 ms, finishedLately), its job is notified for the holder of
// the job that finished last, whose process has likely just gone back to
// waiting, so that one process looks for it now rather than every one,
// all but one for nothing. (The others look once the grace is over, for
// every job notified meanwhile; a process that finishes a job looks at
// once.) Otherwise nobody is named, and every process looks.
const wakeFor = `coalesce((SELECT holder FROM vigil_sessions WHERE id = $1 AND holder ~ ` + claimLease + `), (SELECT s.holder
	FROM vigil_jobs_done d JOIN vigil_sessions s ON s.id = d.session_id
	WHERE d.finished > clock_timestamp() - $6 * interval '1 millisecond' AND s.holder ~ ` + claimLease + `
	ORDER BY d.finished DESC LIMIT 1))`

// claimLease is the SQL pattern of a holder name a claim's lease has
// (see newClaimToken): only a claim gives a store its session's next
// job (see claimableJobs).
const claimLease = `'#c[0-9]+$'`

// notifiedHolder is the SQL expression of a holder name (expr) as a
// notification of a job or a release gives it, in the place of the
// number (see fan.listen): '0' for none, spaces made '_', so that the
// payload stays "K N ID" and a process of an older Vigil reads it as
// before.
func notifiedHolder(expr string) string {
	return `coalesce(replace(` + expr + `, ' ', '_'), '0')`
}

// releaseSQL is a statement's tail (after retireSQL) that deletes the
// lease of holder $h on the session of the job moved (CTE d, job $1) and
// notifies its release, naming the holder (see fan.wake): CTE lr, one row
// if it did.
func releaseSQL(h, ch int) string {
	return fmt.Sprintf(`, lr AS (
		DELETE FROM vigil_leases l USING d WHERE l.session_id = d.session_id AND l.holder = $%d::text
		RETURNING l.session_id
	), ln AS (
		SELECT pg_notify($%d::text, `+releaseKind(`lr.session_id`, `$1`)+` || ' ' || `+notifiedHolder(fmt.Sprintf(`$%d::text`, h))+` || ' ' || lr.session_id) FROM lr
	)`, h, ch)
}

// Finish implements [session.Claim]: the job's row moves to
// vigil_jobs_done with its outcome, and the claim's lease is released, in
// one statement and commit. A job claimed again by another worker since
// this claim's lease was lost is left to it, and the error wraps
// [session.ErrFenced].
func (c *claim) Finish(ctx context.Context, o session.Outcome) error {
	o, err := o.Normalize()
	if err != nil {
		return fmt.Errorf("pgstore: finish job %s: %w", jobID(c.jid), err)
	}
	return c.end(ctx, "finish", func() (bool, error) {
		if d := c.s.takeDeferred(c.job.Session, c.fence()); d != nil {
			return c.finishWith(ctx, o, d)
		}
		var n, released, notified int64
		args := append([]any{c.jid, c.epoch}, outcomeArgs(o)...)
		args = append(args, c.lease.token, c.s.jobsChannel)
		err := c.s.queryRow(ctx, []any{&n, &released, &notified},
			`WITH d AS (DELETE FROM vigil_jobs WHERE id = $1 AND epoch = $2 AND holder = $8::text RETURNING *)`+retireSQL(3)+releaseSQL(8, 9)+
				` SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM lr), (SELECT count(*) FROM ln)`, args...)
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, c.gone(ctx)
		}
		return released == 1, nil
	})
}

// finishSQL is Finish's statement when the turn's last records were
// deferred to it (see deferred.go): appendSQL's append, under the claim's
// fence, and then, only if it went through, the job's move to
// vigil_jobs_done and the lease's release, in one commit. $8 is the
// lease's holder name, $9 the events channel, $10 are the lines, $11 the
// session, $12 the seq of the first, $13 the jobs channel.
var finishSQL = `WITH ` + appendCTEs(11, 12, 10, 2, 8, 9, false) + `,
d AS (DELETE FROM vigil_jobs WHERE id = $1 AND epoch = $2 AND holder = $8::text AND EXISTS (SELECT 1 FROM s) RETURNING *)` +
	retireSQL(3) + releaseSQL(8, 13) + `
SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM ins), (SELECT count(*) FROM r), (SELECT count(*) FROM lr),
	(SELECT count(*) FROM n) + (SELECT count(*) FROM ln), (SELECT count(v) FROM cfg)`

// finishWith is Finish's statement with the turn's last records d.
func (c *claim) finishWith(ctx context.Context, o session.Outcome, d *deferred) (bool, error) {
	var moved, inserted, n, released, notified, cfg int64
	args := append([]any{c.jid, c.epoch}, outcomeArgs(o)...)
	args = append(args, c.lease.token, c.s.channel, d.lines, c.job.Session, d.next, c.s.jobsChannel)
	err := c.s.queryRow(ctx, []any{&moved, &inserted, &n, &released, &notified, &cfg}, finishSQL, args...)
	switch {
	case err != nil:
		return false, err
	case moved == 0:
		if err := c.s.refusal(ctx, c.job.Session, c.fence(), d.next, false); err != nil {
			return false, err
		}
		return false, fmt.Errorf("%w: the log or its lease changed concurrently", session.ErrConflict)
	case inserted != int64(len(d.lines)):
		return false, fmt.Errorf("inserted %d of %d events", inserted, len(d.lines))
	case n == 0:
		return false, c.gone(ctx)
	}
	return released == 1, nil
}

// Release implements [session.Claim]: the job is queued again, its Base
// and Attempts kept; a job cancelled meanwhile is dropped instead.
func (c *claim) Release(ctx context.Context) error {
	return c.end(ctx, "release", func() (bool, error) {
		if d := c.s.takeDeferred(c.job.Session, c.fence()); d != nil {
			// Handed back: what the turn appended is written all the same.
			if err := c.s.write(ctx, c.job.Session, c.fence(), d.next, d.lines); err != nil {
				c.s.log.Warn("writing a handed-back job's last records failed", "session", c.job.Session, "error", err)
			}
		}
		var n int64
		err := c.s.queryRow(ctx, []any{&n}, `WITH q AS (
			UPDATE vigil_jobs SET state = 'queued', worker = NULL, epoch = NULL, holder = NULL
			WHERE id = $1 AND epoch = $2 AND holder = $8 AND NOT cancelled RETURNING 1
		), d AS (
			DELETE FROM vigil_jobs WHERE id = $1 AND epoch = $2 AND holder = $8 AND cancelled RETURNING *
		)`+retireSQL(3)+` SELECT (SELECT count(*) FROM r) + (SELECT count(*) FROM q)`, append(append([]any{c.jid, c.epoch}, cancelledArgs...), c.token)...)
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, c.gone(ctx)
		}
		return false, nil
	})
}

// Cancel implements [session.Queue]: queued jobs are deleted, and so is a
// running job whose claim's lease is gone (its worker died); the running
// job of a live claim is marked cancelled, and a notification tells the
// claim's watcher, in whatever process holds it.
func (s *Store) Cancel(ctx context.Context, id string) (int, error) {
	if err := checkID(id); err != nil {
		return 0, session.StoreError("pgstore", "cancel", "", err)
	}
	var found, dropped, signalled, notified int64
	err := s.queryRow(ctx, []any{&found, &dropped, &signalled, &notified}, `WITH s AS (
		SELECT s.id, s.epoch, EXISTS (SELECT 1 FROM vigil_leases l WHERE l.session_id = s.id AND l.expires > clock_timestamp()) AS live
		FROM vigil_sessions s WHERE s.id = $1
	), d AS (
		DELETE FROM vigil_jobs j USING s WHERE j.session_id = s.id
		  AND NOT (j.state = 'running' AND j.epoch = s.epoch AND s.live)
		RETURNING j.*
	), r AS (
		INSERT INTO vigil_jobs_done (id, session_id, kind, call, input, enqueued, started, finished, base, attempts, worker, state)
		SELECT id, session_id, kind, call, input, enqueued, started, clock_timestamp(), base, attempts, worker, 'cancelled' FROM d
	), c AS (
		UPDATE vigil_jobs j SET cancelled = true FROM s WHERE j.session_id = s.id
		  AND j.state = 'running' AND j.epoch = s.epoch AND s.live
		RETURNING j.id
	), n AS (
		SELECT pg_notify($2, 'c 0 ' || $1) WHERE EXISTS (SELECT 1 FROM d) OR EXISTS (SELECT 1 FROM c)
	)
	SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM d), (SELECT count(*) FROM c), (SELECT count(*) FROM n)`,
		id, s.jobsChannel)
	if err != nil {
		return 0, session.StoreError("pgstore", "cancel", id, err)
	}
	if found == 0 {
		return 0, session.StoreError("pgstore", "cancel", id, session.ErrNotFound)
	}
	return int(dropped + signalled), nil
}
