package pgstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/vigil-run/vigil/session"
)

// Follow yields the records of session id from seq from on: those stored
// now, then each one as soon as any process appends it and it is durable
// (see [Store.Flush]). The store's
// followers share one LISTEN connection (see fan), and read through the
// pool only when woken, so a follower waiting holds no connection: an API
// process can stream to thousands of idle sessions. It ends when ctx is
// done, without an error, or at the first error: an unknown session
// ([session.ErrNotFound]), a record that does not decode, reads that
// failed for a minute (a server that went away is waited for that long,
// and what was appended meanwhile read then: no gap, no repeat).
//
//	for r, err := range store.Follow(ctx, id, 0) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(r) // the canonical JSONL line
//	}
func (s *Store) Follow(ctx context.Context, id string, from int64) iter.Seq2[session.Record, error] {
	return func(yield func(session.Record, error) bool) {
		fail := func(err error) {
			if err != nil && ctx.Err() == nil {
				yield(session.Record{}, session.StoreError("pgstore", "follow", id, err))
			}
		}
		if err := checkID(id); err != nil {
			fail(err)
			return
		}
		// Subscribed before the first read, so that nothing appended
		// after it goes unnoticed.
		wake, unsubscribe, err := s.subscribe(topic{'e', id})
		if err != nil {
			fail(err)
			return
		}
		defer unsubscribe()
		// An unknown session is found so by the first read (errGone).
		f := &follower{s: s, id: id, wake: wake, next: max(from, 0)}
		f.reset()
		for {
			recs, err := f.read(ctx)
			if err != nil {
				if end, why := f.retry(ctx, err); end {
					fail(why)
					return
				}
				continue
			}
			f.reset()
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
				f.next = r.Seq() + 1
			}
			if len(recs) == followBatch {
				continue // more may be stored: read on before waiting
			}
			if end, why := f.await(ctx); end {
				fail(why)
				return
			}
			if f.stale {
				// Staged events waited long enough: make them durable,
				// since whoever staged them may be gone.
				if _, err := f.s.makeDurable(ctx, f.id); err != nil {
					if end, why := f.retry(ctx, err); end {
						fail(why)
						return
					}
				}
			}
		}
	}
}

// follower is the state of one [Store.Follow] between its reads.
type follower struct {
	s    *Store
	id   string
	wake <-chan struct{}
	next int64 // the seq to read from
	// staged: the last read found staged events past what it read (see
	// stage.go); stale: await waited followStaged for them in vain.
	staged, stale bool
	failing       time.Time // since when reads fail, zero while they work
	pause         time.Duration
}

// reset records that a read worked.
func (f *follower) reset() { f.failing, f.pause = time.Time{}, 50*time.Millisecond }

// read reads the records from f.next on, a batch at most. Every row it
// reads is durable: it reads up to the session's staged events (see
// stage.go), and every other statement that writes events commits
// synchronously (see syncSetting), so a follower's copy is a prefix of
// the log whatever crashes. A session not stored (never, or deleted
// since) is errGone.
//
// Its statement is not cut short by ctx (see uninterrupted): a
// follower's client that leaves mid-read would cost the pool its
// connection. Waiting for a connection is.
func (f *follower) read(ctx context.Context) ([]session.Record, error) {
	var recs []session.Record
	known := false
	err := f.s.pool.with(ctx, func(c *pgx.Conn) (err error) {
		rctx, cancel := f.s.uninterrupted(ctx)
		defer cancel()
		recs, f.staged, known, err = after(rctx, c, f.id, f.next)
		return err
	})
	if err == nil && !known {
		return nil, errGone
	}
	return recs, err
}

// retry decides what a failed read does: a log that does not decode,
// a session deleted or a follow cancelled end it, as does a server gone
// away for longer than followRetry; a server that went away (a restart, a
// failover) is otherwise waited for, with a growing pause. It reports
// whether the follow ends, and with what error (nil: quietly).
func (f *follower) retry(ctx context.Context, err error) (bool, error) {
	if errors.Is(err, errGone) {
		return true, session.ErrNotFound
	}
	if errors.As(err, new(*session.CorruptError)) || ctx.Err() != nil {
		return true, err
	}
	if f.failing.IsZero() {
		f.failing = time.Now()
		f.s.log.Warn("following a session: reading failed; trying again", "session", f.id, "error", err)
	}
	if time.Since(f.failing) > followRetry {
		return true, err
	}
	select {
	case <-ctx.Done():
		return true, nil
	case <-f.s.bg.Done():
		return true, errPoolClosed
	case <-time.After(f.pause):
	}
	f.pause = min(2*f.pause, time.Second)
	return false, nil
}

// await waits for the session to grow, or, when staged events wait to
// be durable, for followStaged at most (then f.stale). It reports whether
// the follow ends, and with what error (nil: quietly).
func (f *follower) await(ctx context.Context) (bool, error) {
	var timeout <-chan time.Time
	f.stale = false
	if f.staged {
		t := time.NewTimer(followStaged)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
		return true, nil
	case <-f.s.bg.Done():
		return true, errPoolClosed
	case <-f.wake:
		return false, nil
	case <-timeout:
		f.stale = true
		return false, nil
	}
}

// followStaged is how long a follower that found staged events waits for
// the synchronous commit that makes them durable (their writer's next
// step, or its turn's end) before it makes them durable itself: their
// writer may be dead, and a reader waiting for them (a log read up to its
// tail) would wait for its successor.
var followStaged = time.Second

// errGone is a followed session found not stored (never, or deleted
// since): the follow ends with [session.ErrNotFound], without retrying.
var errGone = errors.New("pgstore: no such session")

// followRetry bounds how long a follower whose reads fail (the database
// restarting, a failover) keeps trying before it ends with the error.
const followRetry = time.Minute

// fan is one of a store's LISTEN connections, shared by everything of
// the store's that waits for another process on its channel: on the
// events channel, followers (a session grew); on the jobs channel,
// waiting claims (a job was enqueued, a lease released), cancel watchers
// (a job was cancelled) and lease waiters (a lease was released). A
// notification wakes the subscribers of its topic; they look for
// themselves what changed. When the connection fails it reconnects, and
// once listening again wakes every subscriber, for what was notified
// while nobody listened.
type fan struct {
	channel string // the one it LISTENs to

	mu   sync.Mutex
	subs map[topic]map[chan struct{}]struct{} // topic → its subscribers' wake-ups
	// later wakes a claimer once the jobs notified for other stores'
	// sessions are this store's to claim too (see wake); nil when none is
	// due. due is when the last of them is.
	later *time.Timer
	due   time.Time
	// news counts what may have made a job claimable by this store: a job
	// or a release notified for it, a grace over, the connection back, a
	// claim that saw more jobs than it took, a look that failed. A claim
	// that found none notes the count it looked at (seen) and until when
	// its look holds without news (quiet: the soonest lease on a session
	// with jobs expires then); a claim that comes before either moves need
	// not look (see Store.tryClaim).
	news, seen uint64
	quiet      time.Time
	// looking counts the claims of the store looking now; lookedAt is
	// the news the latest of them came with. A claim that comes with no
	// news since leaves the look to it (see mayFind).
	looking  int
	lookedAt uint64
	// expiry is the soonest expiry of a live lease on a session with
	// jobs, as read (at read) by a look that found nothing; a look within
	// expiryFresh of the read goes by it (see Store.untilExpiry).
	expiry, read time.Time
	// looks and expiryReads count the claim statements and the expiry
	// reads of the store's claims, for the tests.
	looks, expiryReads atomic.Uint64
}

// topic is what a subscriber waits for: notifications of kind ('e' a
// session grew, 'q' a job was enqueued, 'l' a lease was released, 'c' a
// job was cancelled) about session id, or about any session when id is "".
// A notification of kind 'r', a lease released on a session with jobs
// queued, is both an 'l' and a 'q' one.
type topic struct {
	kind byte
	id   string
}

// A store's fans, one per channel: followers wait on the events fan,
// claims, lease waiters and cancel watchers on the jobs fan.
const (
	eventsFan = iota
	jobsFan
)

// fanOf is the fan that carries notifications of kind.
func fanOf(kind byte) int {
	if kind == 'e' {
		return eventsFan
	}
	return jobsFan
}

// subscribe returns a channel that receives when a notification of
// topic t may have come, starting the store's fan for its channel on
// first use; unsubscribe drops it.
func (s *Store) subscribe(t topic) (wake <-chan struct{}, unsubscribe func(), err error) {
	s.mu.Lock()
	if s.bg.Err() != nil { // no goroutine starts once stopped (see shutdown)
		s.mu.Unlock()
		return nil, nil, errPoolClosed
	}
	i := fanOf(t.kind)
	if s.fans[i] == nil {
		channel := s.channel
		if i == jobsFan {
			channel = s.jobsChannel
		}
		s.fans[i] = &fan{channel: channel, subs: map[topic]map[chan struct{}]struct{}{}}
		s.watchers.Add(1)
		go func(f *fan) {
			defer s.watchers.Done()
			f.run(s)
		}(s.fans[i])
	}
	f := s.fans[i]
	s.mu.Unlock()
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	if f.subs[t] == nil {
		f.subs[t] = map[chan struct{}]struct{}{}
	}
	f.subs[t][ch] = struct{}{}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs[t], ch)
		if len(f.subs[t]) == 0 {
			delete(f.subs, t)
		}
		select {
		case <-ch:
			if t == claimers {
				f.signalOne(claimers) // a signal it did not take: hand it on
			}
		default:
		}
	}, nil
}

// claimers is the topic of the store's waiting claims: any job enqueued.
var claimers = topic{'q', ""}

// wake signals the subscribers of a notification of kind about id, or
// every subscriber when all. A notification that a job may be claimable
// ('q', 'r') wakes one waiting claim of the store, not all: they would
// all look for the one job, and one of them is enough (see signalOne).
// When it names the session's last holder, a claim's lease of another
// store (mine false), the job is that store's for affinityGrace (see
// claimableSQL): the claim is woken then, once for all the jobs
// notified meanwhile, and finds the job if that store did not take it.
func (f *fan) wake(kind byte, id string, mine, all bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if all {
		f.news++
		for _, subs := range f.subs {
			signalAll(subs)
		}
		return
	}
	switch kind {
	case 'q':
		signalAll(f.subs[topic{'q', id}])
		f.claimer(mine)
	case 'r':
		// A lease released on a session with jobs queued: its lease's
		// waiters and a claimer both.
		signalAll(f.subs[topic{'l', id}])
		signalAll(f.subs[topic{'l', ""}])
		f.claimer(mine)
	default:
		signalAll(f.subs[topic{kind, id}])
		signalAll(f.subs[topic{kind, ""}])
	}
}

// wakeClaimer wakes one waiting claim of the store, if any.
func (s *Store) wakeClaimer() {
	s.mu.Lock()
	f := s.fans[jobsFan]
	s.mu.Unlock()
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.news++
	f.signalOne(claimers)
}

// claimer wakes a waiting claim for a job just notified: now when mine,
// else once the job is this store's to claim too (f.mu held). One timer
// serves every job notified meanwhile: when it fires it wakes a claim,
// which looks for every job, and it is set again for the jobs notified
// since it was set, whose grace is not over yet.
func (f *fan) claimer(mine bool) {
	if mine {
		f.news++
		f.signalOne(claimers)
		return
	}
	// Just past the grace, so that the job is claimable when looked at.
	f.due = time.Now().Add(affinityGrace + 10*time.Millisecond)
	if f.later == nil {
		f.later = time.AfterFunc(affinityGrace+10*time.Millisecond, f.graceOver)
	}
}

// graceOver is claimer's timer: it wakes a claim, and is set again until
// the last job notified is due.
func (f *fan) graceOver() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.news++
	f.signalOne(claimers)
	if left := time.Until(f.due); left > 0 {
		f.later.Reset(left)
		return
	}
	f.later = nil
}

// mayFind reports whether a claim may find a job now, with the news it
// looks at; when it may not, how long it may wait for news instead. It
// may not when nothing came since a claim found none, and no lease has
// expired since; nor, while another claim of the store looks, when
// nothing came since the latest look began: that look sees all this one
// would, and what a look leaves (a job more than it took, its failure)
// is news. A claim that may look is counted as looking until it calls
// lookEnded.
func (f *fan) mayFind() (news uint64, look bool, wait time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.news == f.seen {
		if left := time.Until(f.quiet); left > 0 {
			return f.news, false, left
		}
	}
	if f.looking > 0 && f.news == f.lookedAt {
		return f.news, false, queuePoll
	}
	f.looking++
	f.lookedAt = f.news
	return f.news, true, 0
}

// lookEnded ends a look mayFind allowed. A look that failed is news: a
// claim that left the look to it looks for itself.
func (f *fan) lookEnded(failed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looking--
	if failed {
		f.news++
		f.signalOne(claimers)
	}
}

// foundNothing records that a claim that looked at news found no job,
// and that nothing but news makes one claimable for wait.
func (f *fan) foundNothing(news uint64, wait time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if news >= f.seen {
		f.seen, f.quiet = news, time.Now().Add(wait)
	}
}

// knownExpiry is when a look at now that found nothing may look again
// without news, by the expiry read last: that expiry, or the end of its
// freshness if sooner; false when it must be read again.
func (f *fan) knownExpiry(now time.Time) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fresh := f.read.Add(expiryFresh)
	if now.Before(fresh) && now.Before(f.expiry) {
		if fresh.Before(f.expiry) {
			return fresh, true
		}
		return f.expiry, true
	}
	return time.Time{}, false
}

// noteExpiry records the expiry a look read at read.
func (f *fan) noteExpiry(read, expiry time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expiryReads.Add(1)
	f.read, f.expiry = read, expiry
}

// signalAll signals each of subs.
func signalAll(subs map[chan struct{}]struct{}) {
	for ch := range subs {
		select {
		case ch <- struct{}{}:
		default: // already signalled, not yet read
		}
	}
}

// signalOne signals one subscriber of t not signalled yet, if any. The
// claims of a store are alike, so one that looks is enough; a claim that
// leaves with a signal it did not take hands it on (see subscribe), so
// none is lost to a claim that was busy claiming when signalled.
func (f *fan) signalOne(t topic) {
	for ch := range f.subs[t] {
		select {
		case ch <- struct{}{}:
			return
		default: // signalled already: it will look
		}
	}
}

// run keeps the fan's connection listening until the store closes.
func (f *fan) run(s *Store) {
	backoff := 50 * time.Millisecond
	for {
		listened, err := f.listen(s)
		if s.bg.Err() != nil {
			return
		}
		if listened {
			backoff = 50 * time.Millisecond
		}
		s.log.Warn("the store's LISTEN connection failed; reconnecting", "error", err, "in", backoff)
		select {
		case <-s.bg.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// listen connects, LISTENs and dispatches notifications until the
// connection fails or the store closes; listened says whether it got as
// far as listening.
func (f *fan) listen(s *Store) (listened bool, err error) {
	cfg := s.pool.config()
	me := strings.ReplaceAll(s.holder, " ", "_") + "#"
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if n.Channel != f.channel {
			return
		}
		// "K N ID": a notification of kind K about session ID. For a job
		// ('q') or a release ('r', 'l'), N is the session's last holder
		// (a lease's name, holder#seq; see notifiedHolder), '0' for none.
		parts := strings.SplitN(n.Payload, " ", 3)
		if len(parts) == 3 && len(parts[0]) == 1 {
			mine := parts[1] == "0" || !claimToken(parts[1]) || strings.HasPrefix(parts[1], me)
			f.wake(parts[0][0], parts[2], mine, false)
		}
	}
	conn, err := pgx.ConnectConfig(s.bg, cfg)
	if err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	}()
	if _, err := conn.Exec(s.bg, "LISTEN "+pgx.Identifier{f.channel}.Sanitize()); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	f.wake(0, "", true, true)
	for {
		if err := conn.PgConn().WaitForNotification(s.bg); err != nil {
			return true, fmt.Errorf("listen: %w", err)
		}
	}
}

// followBatch bounds the records a follower reads at once, so that
// following a long log never holds the whole of it.
var followBatch = 1000

// afterQuery reads the durable events of session $1 from seq $2 on, $3
// at most: up to its first staged one (see stage.go). Each row says
// whether staged events follow; a session with none to read gives one
// row without a line, a session unknown none.
const afterQuery = `SELECT e.line, h.volatile IS NOT NULL FROM vigil_sessions h
LEFT JOIN LATERAL (SELECT line, seq FROM vigil_events
	WHERE session_id = $1 AND seq >= $2 AND seq < coalesce(h.volatile, h.next) ORDER BY seq LIMIT $3) e ON true
WHERE h.id = $1 ORDER BY e.seq`

// after returns the durable records of id from seq next on, followBatch
// at most, whether staged events follow them, and whether the session is
// stored at all.
func after(ctx context.Context, conn *pgx.Conn, id string, next int64) (out []session.Record, staged, known bool, err error) {
	rows, err := conn.Query(ctx, afterQuery, id, next, followBatch)
	if err != nil {
		return nil, false, false, err
	}
	defer rows.Close()
	for rows.Next() {
		known = true
		raw := rows.RawValues()
		staged = isTrue(raw[1])
		if raw[0] == nil {
			continue // nothing to read
		}
		r, err := session.DecodeRecord(raw[0])
		if err != nil {
			return nil, false, true, &session.CorruptError{Line: int(next) + 2, Err: err}
		}
		if r.Seq() != next {
			return nil, false, true, &session.CorruptError{Line: int(next) + 2, Err: fmt.Errorf("%w: seq %d, want %d", session.ErrSeqGap, r.Seq(), next)}
		}
		out = append(out, r)
		next++
	}
	return out, staged, known, rows.Err()
}

// isTrue reads a raw bool column, in the binary format or the text one.
func isTrue(raw []byte) bool { return len(raw) == 1 && (raw[0] == 1 || raw[0] == 't') }
