package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-run/vigil/session"
)

// lease is a turn lease this store holds, taken by [Store.Lease] or by a
// claim of the queue.
type lease struct {
	s     *Store
	id    string
	token string // the holder name in vigil_leases, unique to this lease
	epoch int64  // the session's epoch this lease set when it was taken
	// claimed: taken by a queue claim, whose end is a statement of the
	// store's (see deferred.go).
	claimed bool
	once    sync.Once

	mu       sync.Mutex
	stop     chan struct{} // closed to stop the renewer; nil while none runs
	done     chan struct{} // closed by the renewer when it returns
	lost     bool          // a renewal found the lease taken by another holder
	released bool
}

// held returns the lease this store holds on id, nil when none. A lost
// lease is still held (and fences its holder's appends) until released.
func (s *Store) held(id string) *lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leases[id]
}

// heldEpoch returns the epoch of the lease this store holds on id, 0 when
// it holds none.
func (s *Store) heldEpoch(id string) int64 { return s.heldFence(id).epoch }

// fence is what an append or a claim's job update is made under: the
// epoch of a lease and its holder name. The epoch orders leases; the name,
// unique to one lease, tells two leases of one epoch apart, as a claim
// lost in a database crash and the next one are (see schema version 7).
// The zero fence is no lease.
type fence struct {
	epoch int64
	token string
}

// heldFence returns the fence of the lease this store holds on id, the
// zero fence when it holds none.
func (s *Store) heldFence(id string) fence {
	if l := s.held(id); l != nil {
		return fence{l.epoch, l.token}
	}
	return fence{}
}

// fenceOf returns the fence of an append under epoch: the lease this
// store holds on id, when it has that epoch; else a fence that no
// session row matches (an epoch this store does not hold is fenced).
func (s *Store) fenceOf(id string, epoch int64) fence {
	if f := s.heldFence(id); f.epoch == epoch {
		return f
	}
	return fence{epoch: epoch}
}

// Epoch implements [session.Fencer]: the epoch of the lease this store
// holds on id (taken by [Store.Lease] or by a queue claim), 0 when it holds
// none. A lease found lost keeps its epoch until it is released, so that
// its holder's appends keep being refused.
func (s *Store) Epoch(id string) int64 { return s.heldEpoch(id) }

// busyError is the ErrBusy of a lease held by holder for left seconds
// more: a *session.LockError, so that a waiter can show both.
func busyError(id, holder string, left float64) error {
	d := time.Duration(math.Max(left, 0) * float64(time.Second))
	return &session.LockError{Holder: holder, Expires: time.Now().Add(d),
		Err: fmt.Errorf("%w: %s: a turn is running in %s (its lease expires in %s unless renewed)",
			ErrBusy, id, holder, d.Round(100*time.Millisecond))}
}

// fencedError is the ErrFenced of an append under the lease of epoch
// when the session is at epoch current.
func fencedError(id string, epoch, current int64) error {
	return fmt.Errorf("%w: %s: the lease of epoch %d was superseded (the session is at epoch %d)",
		session.ErrFenced, id, epoch, current)
}

// Lease takes the turn lease of session id: until release is called, no
// other holder (another Store, in this process or any other) can take it,
// and their appends to the session are refused with [ErrBusy]. The lease
// lives in the database with an expiry and is renewed in the background
// every third of the TTL; if this process dies, it expires and the next
// holder takes over (and should open the session afresh, which repairs
// the interrupted turn; see [live.OpenLeased] (package session/live)).
//
// When another holder has the lease, Lease returns an error wrapping
// ErrBusy (and so [session.ErrLocked]) that names it, or, with wait,
// waits until the lease is released or expires, or ctx is done. An
// unknown session is [session.ErrNotFound].
//
// Leases are not reentrant: a store that holds a session's lease is busy
// to itself too. release is idempotent and blocks for at most a round
// trip. A lease that could not be renewed (the database was unreachable
// for a TTL) may be taken by another holder; then this store's appends to
// the session are refused with [session.ErrFenced] until release is
// called (see [Store.AppendFenced]).
func (s *Store) Lease(ctx context.Context, id string, wait bool) (release func(), err error) {
	if err := checkID(id); err != nil {
		return nil, session.StoreError("pgstore", "lease", "", err)
	}
	var wake <-chan struct{}
	if wait {
		// Subscribed (to the store's fan) before the first try, so that
		// a release after it wakes us.
		var unsubscribe func()
		if wake, unsubscribe, err = s.subscribe(topic{'l', id}); err != nil {
			return nil, session.StoreError("pgstore", "lease", id, err)
		}
		defer unsubscribe()
	}
	for {
		l, holder, left, err := s.tryLease(ctx, id)
		if err != nil {
			return nil, session.StoreError("pgstore", "lease", id, err)
		}
		if l != nil {
			return l.release, nil
		}
		if holder == "" {
			continue // the holder left between our two looks
		}
		if !wait {
			return nil, busyError(id, holder, left) // it names the package and id
		}
		// Wake when it is released, or when it expires.
		d := time.Duration(left*float64(time.Second)) + 20*time.Millisecond
		d = min(max(d, 20*time.Millisecond), s.ttl)
		if err := s.sleep(ctx, wake, d); err != nil {
			return nil, fmt.Errorf("pgstore: lease %s: waiting for %s: %w", id, holder, err)
		}
	}
}

// takeLeaseSQL takes the lease of session $1 for holder $2 for $3 ms if
// it is free or expired, and moves the session to the next epoch in the
// same statement, naming the lease's holder there (takeLeaseCTEs).
var takeLeaseSQL = `WITH ` + takeLeaseCTEs(`SELECT id FROM vigil_sessions WHERE id = $1`, 2, 3) + ` SELECT epoch FROM e`

// takeLeaseCTEs are the CTEs l and e of a statement that takes the lease
// of the session its query sessions gives (a column id, a row at most)
// for holder $holder for $ttl ms if it is free or expired (l), and moves
// the session to the next epoch, naming the lease's holder there (e, its
// epoch). The insert serializes takers on the lease row, the update on
// the session row (which appends lock too), so epochs grow strictly and
// an append fenced by an older epoch, or by another lease of the same
// epoch, cannot slip in after.
func takeLeaseCTEs(sessions string, holder, ttl int) string {
	return fmt.Sprintf(`l AS (
	INSERT INTO vigil_leases (session_id, holder, expires)
	SELECT id, $%[2]d, clock_timestamp() + $%[3]d * interval '1 millisecond' FROM (%[1]s) t
	ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires = excluded.expires
	WHERE vigil_leases.expires <= clock_timestamp()
	RETURNING session_id
),
e AS (
	UPDATE vigil_sessions s SET epoch = s.epoch + 1, holder = $%[2]d FROM l WHERE s.id = l.session_id RETURNING s.epoch
)`, sessions, holder, ttl)
}

// newToken returns a holder name for a new lease: the store's name and a
// number, holder#seq.
func (s *Store) newToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaseSeq++
	return fmt.Sprintf("%s#%d", s.holder, s.leaseSeq)
}

// newClaimToken returns a holder name for the lease of a queue claim,
// holder#cseq: a session whose last lease was a claim's is that store's
// to run the next job of (see claimableJobs and fan.claimer).
func (s *Store) newClaimToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaseSeq++
	return fmt.Sprintf("%s#c%d", s.holder, s.leaseSeq)
}

// claimToken reports whether holder is the name of a claim's lease.
func claimToken(holder string) bool {
	i := strings.LastIndexByte(holder, '#')
	if i < 0 || len(holder) < i+3 || holder[i+1] != 'c' {
		return false
	}
	for _, r := range holder[i+2:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// hold registers a lease just taken in the database and starts renewing
// it.
func (s *Store) hold(id, token string, epoch int64, claimed bool) *lease {
	l := &lease{s: s, id: id, token: token, epoch: epoch, claimed: claimed}
	s.mu.Lock()
	s.leases[id] = l
	s.mu.Unlock()
	l.startRenewing()
	return l
}

// tryLease takes the lease if it is free or expired. Otherwise it returns
// the live lease's holder and seconds left ("" if it was gone when
// looked at).
func (s *Store) tryLease(ctx context.Context, id string) (*lease, string, float64, error) {
	token := s.newToken()
	var epoch int64
	err := s.queryRow(ctx, []any{&epoch}, takeLeaseSQL, id, token, s.ttl.Milliseconds())
	if err == nil {
		return s.hold(id, token, epoch, false), "", 0, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, "", 0, err
	}
	var holder *string
	var left *float64
	err = s.queryRow(ctx, []any{&holder, &left}, `SELECT l.holder, extract(epoch FROM l.expires - clock_timestamp())::float8
		FROM vigil_sessions s LEFT JOIN vigil_leases l ON l.session_id = s.id AND l.expires > clock_timestamp()
		WHERE s.id = $1`, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", 0, session.ErrNotFound
	}
	if err != nil {
		return nil, "", 0, err
	}
	if holder == nil {
		return nil, "", 0, nil
	}
	return nil, *holder, *left, nil
}

// startRenewing starts the renewer unless the lease is lost or released.
func (l *lease) startRenewing() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != nil || l.lost || l.released {
		return
	}
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go l.renew(l.stop, l.done)
}

// stopRenewing stops the renewer, if one runs, and waits for it.
func (l *lease) stopRenewing() {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.stop, l.done = nil, nil
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// renew extends the lease every third of the TTL until it is stopped or
// lost.
func (l *lease) renew(stop, done chan struct{}) {
	defer close(done)
	s := l.s
	t := time.NewTicker(s.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ok, err := l.renewOnce()
		switch {
		case errors.Is(err, errPoolClosed):
			return
		case err != nil:
			s.log.Warn("renewing a turn lease failed; retrying", "session", l.id, "error", err)
		case !ok:
			return
		}
	}
}

// renewOnce extends the lease once. It reports false when the lease was
// found lost: then it stays held, lost, so that its holder's appends are
// refused ([session.ErrFenced]) until the holder releases it, rather than
// made as appends without a lease.
func (l *lease) renewOnce() (bool, error) {
	s := l.s
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return false, errPoolClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.ttl/3)
	defer cancel()
	// Committed asynchronously: a renewal lost in a crash only makes the
	// lease expire sooner, and a holder that lost it so is fenced by the
	// epoch the next taker moves, which that claim commits durably.
	tag, err := s.exec(ctx, asyncTag+`UPDATE vigil_leases SET expires = clock_timestamp() + $3 * interval '1 millisecond'
		FROM (SELECT set_config('synchronous_commit', 'off', true)) cfg
		WHERE session_id = $1 AND holder = $2`, l.id, l.token, s.ttl.Milliseconds())
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() == 0 {
		s.log.Error("lost a turn lease: it expired and was taken over", "session", l.id, "epoch", l.epoch)
		l.mu.Lock()
		l.lost = true
		l.mu.Unlock()
		return false, nil
	}
	return true, nil
}

// forget drops l from the store's held leases.
func (s *Store) forget(l *lease) {
	s.mu.Lock()
	if s.leases[l.id] == l {
		delete(s.leases, l.id)
	}
	s.mu.Unlock()
}

// release stops renewing, deletes the lease and wakes waiters. Errors
// are logged: an undeleted lease expires on its own.
func (l *lease) release() { l.end(true) }

// end ends the lease here: its renewals stopped, and it forgotten;
// deleted in the database (waking waiters) unless the caller's own
// statement did that (del false).
func (l *lease) end(del bool) {
	l.once.Do(func() {
		l.mu.Lock()
		l.released = true
		l.mu.Unlock()
		l.stopRenewing()
		s := l.s
		s.forget(l)
		s.takeDeferred(l.id, fence{l.epoch, l.token}) // not written by the claim's end: lost, as in a crash
		s.closeMu.RLock()
		defer s.closeMu.RUnlock()
		if s.closed || !del {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := s.exec(ctx, `WITH d AS (DELETE FROM vigil_leases WHERE session_id = $1 AND holder = $2 RETURNING 1)
			SELECT pg_notify($3, `+releaseKind(`$1`, `0`)+` || ' ' || `+notifiedHolder(`$2::text`)+` || ' ' || $1) FROM d`, l.id, l.token, s.jobsChannel)
		if err != nil {
			s.log.Warn("releasing a turn lease failed; it will expire", "session", l.id, "error", err)
		}
	})
}
