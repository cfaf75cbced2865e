package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/oklog/ulid/v2"
	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Manager makes sessions available: it creates, opens (with crash repair),
// forks and seeds them over a [Store], keeps the live ones, and emits
// [Created] for each. It is provided as the [Sessions] service. Its
// methods are safe for concurrent use.
type Manager struct {
	c     *bus.Context
	store session.Store
	clock func() time.Time
	newID func() string
	log   hclog.Logger
	// signer signs the sessions' checkpoints; nil signs none.
	signer note.Signer

	mu   sync.Mutex
	live map[string]*Session

	hot hot // the sessions parked between turns (see hot.go)
}

// ManagerOption configures a [Manager].
type ManagerOption func(*Manager)

// WithClock sets the clock that stamps records and headers (default
// time.Now). Tests use it for deterministic logs.
func WithClock(now func() time.Time) ManagerOption {
	return func(m *Manager) {
		if now != nil {
			m.clock = now
		}
	}
}

// WithIDs sets the generator of new session ids (default: a ULID at the
// clock's time). Ids must satisfy [ValidID].
func WithIDs(newID func() string) ManagerOption {
	return func(m *Manager) {
		if newID != nil {
			m.newID = newID
		}
	}
}

// NewManager returns a manager of the sessions in store that dispatches
// on c's bus (sessions dispatch on contexts scoped to themselves, owned by
// c's fiber).
func NewManager(c *bus.Context, store session.Store, opts ...ManagerOption) *Manager {
	m := &Manager{c: c, store: store, clock: time.Now, log: c.Logger(), live: map[string]*Session{}}
	m.hot.lim = DefaultHotLimits
	for _, o := range opts {
		o(m)
	}
	if m.newID == nil {
		m.newID = func() string {
			return ulid.MustNew(ulid.Timestamp(m.clock()), ulid.DefaultEntropy()).String()
		}
	}
	return m
}

// Store returns the manager's store.
func (m *Manager) Store() session.Store { return m.store }

// Live returns the sessions made available and not closed, sorted by id.
func (m *Manager) Live() []*Session {
	m.mu.Lock()
	out := make([]*Session, 0, len(m.live))
	for _, s := range m.live {
		out = append(out, s)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b *Session) int { return strings.Compare(a.ID(), b.ID()) })
	return out
}

// Get returns the live session id (not one being closed).
func (m *Manager) Get(id string) (*Session, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.live[id]
	if ok && s.isClosed() {
		return nil, false
	}
	return s, ok
}

// watched reports whether any listener could see an append's dispatch,
// which is when a reentrant append must be told from a concurrent one.
func (m *Manager) watched() bool {
	r := m.c.Root()
	return r.ListenerCount(Committed.Name()) > 0 || r.ListenerCount(bus.Veto.Name()) > 0
}

func (m *Manager) now() time.Time { return session.LogTime(m.clock()) }

// Create makes a new, empty session of the default tenant, made by
// nobody in particular (see [Manager.CreateOwned]).
func (m *Manager) Create(ctx context.Context) (*Session, error) {
	return m.CreateOwned(ctx, "", "")
}

// CreateOwned makes a new, empty session that belongs to tenant ("" is
// [session.DefaultTenant]) and was created by by; its header says both.
func (m *Manager) CreateOwned(ctx context.Context, tenant, by string) (*Session, error) {
	info := session.Info{ID: m.newID(), Version: session.Version, Created: m.now(), Tenant: tenant, By: by}
	if !session.ValidID(info.ID) {
		return nil, fmt.Errorf("session: create: %w: %q", session.ErrInvalidID, info.ID)
	}
	if err := m.store.Create(ctx, info); err != nil {
		return nil, fmt.Errorf("session: create %s: %w", info.ID, err)
	}
	return m.publish(ctx, info, nil)
}

// CreateChild makes a new, empty session whose header names parent: a
// sub-agent's child session, which inherits no events of the parent (see
// [session.Parent]) but its tenant and creator. parent.ID must be a valid
// id and parent.Call set.
func (m *Manager) CreateChild(ctx context.Context, parent session.Parent) (*Session, error) {
	if !session.ValidID(parent.ID) || parent.Call == "" || parent.Seq < 0 {
		return nil, fmt.Errorf("session: create child: %w: parent %+v", session.ErrInvalidID, parent)
	}
	owner, err := m.infoOf(ctx, parent.ID)
	if err != nil {
		return nil, fmt.Errorf("session: create child of %s: %w", parent.ID, err)
	}
	info := session.Info{ID: m.newID(), Version: session.Version, Created: m.now(), Tenant: owner.Tenant, By: owner.By, Parent: &parent}
	if !session.ValidID(info.ID) {
		return nil, fmt.Errorf("session: create child: %w: %q", session.ErrInvalidID, info.ID)
	}
	if err := m.store.Create(ctx, info); err != nil {
		return nil, fmt.Errorf("session: create child %s: %w", info.ID, err)
	}
	return m.publish(ctx, info, nil)
}

// Open loads session id, or returns it if it is live. A torn last line is
// dropped and an open tail turn is closed (see [Closers]); the closers are
// appended to the store directly, without a Committed dispatch: listeners
// see them in the log when [Created] is emitted.
func (m *Manager) Open(ctx context.Context, id string) (*Session, error) {
	if s, ok := m.Get(id); ok {
		return s, nil
	}
	if !session.ValidID(id) {
		return nil, session.InvalidID(id)
	}
	// The listeners that read every record read them in the decoder's
	// pass (see Loading).
	load := &Load{id: id}
	if err := Loading.Emit(ctx, m.c, load); err != nil {
		return nil, fmt.Errorf("session: open %s: loading: %w", id, err)
	}
	log, err := session.LoadEach(ctx, m.store, id, load.reader())
	if err != nil {
		return nil, fmt.Errorf("session: open %s: %w", id, err)
	}
	if log.Torn > 0 {
		m.log.Warn("dropped a torn last line", "session", id, "bytes", log.Torn)
	}
	// The session's list is its own: the store keeps whatever it returned.
	// The log is validated and folded once (by its decoder, when the
	// store decoded it).
	state, err := session.NewLogStateOf(log)
	if err != nil {
		return nil, fmt.Errorf("session: open %s: %w", id, err)
	}
	closers, err := session.RepairRecords(state.Records(), m.now())
	if err != nil {
		return nil, fmt.Errorf("session: open %s: %w", id, err)
	}
	if len(closers) > 0 {
		if err := m.store.Append(ctx, id, int64(state.Len()), closers); err != nil {
			return nil, fmt.Errorf("session: open %s: repair: %w", id, err)
		}
		m.log.Warn("closed an interrupted turn", "session", id, "events", len(closers))
		if err := state.Extend(closers...); err != nil {
			return nil, fmt.Errorf("session: open %s: repair: %w", id, err)
		}
		load.read(closers)
	}
	s, err := m.publishState(ctx, log.Info, state, load)
	if err == nil && len(closers) > 0 {
		// The repair ended a turn: it is signed as any turn's end.
		if _, cerr := s.Checkpoint(ctx); cerr != nil {
			m.log.Error("signing a checkpoint", "session", id, "error", cerr)
		}
	}
	return s, err
}

// Fork makes a new session whose log is the log of id up to and including
// seq at (-1: nothing), followed by a session/end-seed event. Its header
// names the parent and at, and the parent's tenant: a fork belongs where
// its parent does, and the root of the inherited prefix's tree, which
// binds the fork to its parent's log. A boundary inside an open turn is an ErrOpenTurn
// error; the parent is never changed. Forking at an earlier boundary is
// how a session is rewound.
func (m *Manager) Fork(ctx context.Context, id string, at int64) (*Session, error) {
	return m.ForkBy(ctx, id, at, "")
}

// ForkBy is [Manager.Fork] whose header names by as who made the fork.
func (m *Manager) ForkBy(ctx context.Context, id string, at int64, by string) (*Session, error) {
	var records []session.Record
	var parent session.Info
	if s, ok := m.Get(id); ok {
		records, parent = s.Records(), s.Info()
	} else {
		log, err := m.store.Load(ctx, id)
		switch {
		case errors.Is(err, session.ErrNotFound):
			return nil, err // it names the id: "session X not found"
		case err != nil:
			return nil, fmt.Errorf("fork %s: %w", id, err)
		}
		records, parent = log.Records, log.Info
	}
	if at < -1 || at >= int64(len(records)) {
		return nil, &outOfLogError{id: id, at: at, n: int64(len(records)), bounds: session.Boundaries(records)}
	}
	prefix := records[:at+1]
	if st := session.OpenTurn(prefix); st != 0 {
		return nil, &openTurnError{id: id, at: at, turn: st, near: nearBoundaries(records, at)}
	}
	now := m.now()
	info := session.Info{ID: m.newID(), Version: session.Version, Created: now, Tenant: parent.Tenant, By: by, Parent: &session.Parent{ID: id, Seq: at, Root: session.RootOf(prefix)}}
	seed, err := session.NewRecord(at+1, now, session.Event{Type: session.TypeEndSeed})
	if err != nil {
		return nil, err
	}
	if err := m.store.Fork(ctx, info, []session.Record{seed}); err != nil {
		return nil, fmt.Errorf("fork %s at %d: %w", id, at, err)
	}
	return m.publish(ctx, info, append(slices.Clone(prefix), seed))
}

// openTurnError refuses a fork at a seq inside an open turn, saying it
// once and naming where a fork may be made. It is session.ErrOpenTurn.
type openTurnError struct {
	id   string
	at   int64
	turn int
	near string
}

func (e *openTurnError) Error() string {
	return fmt.Sprintf("seq %d of session %s is inside turn %d, not at a turn boundary where a fork can start; %s", e.at, e.id, e.turn, e.near)
}

func (e *openTurnError) Is(target error) bool { return target == session.ErrOpenTurn }

// outOfLogError refuses a fork at a seq the log does not have, saying
// so once and naming where a fork may be made. It is session.ErrNotFound
// (the seq is not found), as the API's 404 has it.
type outOfLogError struct {
	id     string
	at, n  int64
	bounds []int64
}

func (e *outOfLogError) Error() string {
	where := "past the end of"
	if e.at < -1 {
		where = "before the start of"
	}
	seqs := "no records"
	if e.n > 0 {
		seqs = fmt.Sprintf("seqs 0..%d", e.n-1)
	}
	return fmt.Sprintf("seq %d is %s session %s, whose log has %s; a fork can start at a turn boundary: %s",
		e.at, where, e.id, seqs, listBoundaries(e.bounds))
}

func (e *outOfLogError) Is(target error) bool { return target == session.ErrNotFound }

// listBoundaries names fork boundaries for a person: every one when there
// are few, else the first two and the last three.
func listBoundaries(bs []int64) string {
	name := func(b int64) string {
		if b == -1 {
			return "-1 (before the first turn)"
		}
		return strconv.FormatInt(b, 10)
	}
	var parts []string
	if len(bs) <= 6 {
		for _, b := range bs {
			parts = append(parts, name(b))
		}
	} else {
		parts = []string{name(bs[0]), name(bs[1]), "…"}
		for _, b := range bs[len(bs)-3:] {
			parts = append(parts, name(b))
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	last := parts[len(parts)-1]
	out := strings.Join(parts[:len(parts)-1], ", ") + " or " + last
	if len(bs) > 6 {
		out += fmt.Sprintf(" (%d in all)", len(bs))
	}
	return out
}

// nearBoundaries names the valid fork boundaries nearest to at, the one
// before it and the one after (if any), for an error that refuses at.
func nearBoundaries(records []session.Record, at int64) string {
	bs := session.Boundaries(records)
	i, _ := slices.BinarySearch(bs, at)
	before := bs[max(i-1, 0)]
	if i >= len(bs) {
		return fmt.Sprintf("the nearest boundary is %d (before the turn)", before)
	}
	return fmt.Sprintf("the nearest boundaries are %d (before the turn) and %d (after it)", before, bs[i])
}

// infoOf returns the header of session id: its live copy's, else the
// stored log's.
func (m *Manager) infoOf(ctx context.Context, id string) (session.Info, error) {
	if s, ok := m.Get(id); ok {
		return s.Info(), nil
	}
	log, err := m.store.Load(ctx, id)
	if err != nil {
		return session.Info{}, err
	}
	return log.Info, nil
}

// Seed makes a new session whose log is events (stamped now, seqs from 0)
// followed by session/end-seed. The events are validated by the rules of
// [Session.Append], and must not end inside an open turn (ErrOpenTurn).
// They are not dispatched as Committed: listeners see them in the log when
// [Created] is emitted.
func (m *Manager) Seed(ctx context.Context, events ...session.Event) (*Session, error) {
	now := m.now()
	records := make([]session.Record, 0, len(events)+1)
	for i := range events {
		r, err := session.NewRecord(int64(i), now, events[i])
		if err != nil {
			return nil, fmt.Errorf("session: seed: %w", err)
		}
		records = append(records, r)
	}
	return m.seed(ctx, records, now)
}

// SeedRecords is [Manager.Seed] with records made elsewhere (another log,
// [NewRecord]), which keep their times. Their seqs must start at 0.
func (m *Manager) SeedRecords(ctx context.Context, records []session.Record) (*Session, error) {
	return m.seed(ctx, slices.Clone(records), m.now())
}

func (m *Manager) seed(ctx context.Context, records []session.Record, now time.Time) (*Session, error) {
	if err := session.Validate(records); err != nil {
		return nil, fmt.Errorf("session: seed: %w", err)
	}
	if st := session.OpenTurn(records); st != 0 {
		return nil, fmt.Errorf("session: seed: %w (turn %d)", session.ErrOpenTurn, st)
	}
	end, err := session.NewRecord(int64(len(records)), now, session.Event{Type: session.TypeEndSeed})
	if err != nil {
		return nil, err
	}
	records = append(records, end)
	info := session.Info{ID: m.newID(), Version: session.Version, Created: now}
	if err := m.store.Create(ctx, info); err != nil {
		return nil, fmt.Errorf("session: seed %s: %w", info.ID, err)
	}
	if err := m.store.Append(ctx, info.ID, 0, records); err != nil {
		return nil, fmt.Errorf("session: seed %s: %w", info.ID, err)
	}
	return m.publish(ctx, info, records)
}

// publish makes the live session, emits Created and adds it to Live.
func (m *Manager) publish(ctx context.Context, info session.Info, records []session.Record) (*Session, error) {
	s, err := newSession(m, info, records)
	if err != nil {
		return nil, err
	}
	return m.publishSession(ctx, s, nil)
}

// publishState is publish of a log already validated, loaded by load.
func (m *Manager) publishState(ctx context.Context, info session.Info, state *session.LogState, load *Load) (*Session, error) {
	s, err := newSessionOf(m, info, state)
	if err != nil {
		return nil, err
	}
	return m.publishSession(ctx, s, load)
}

// publishSession adds s to Live, finishes its load (nil for a session
// that was not loaded) and emits Created.
func (m *Manager) publishSession(ctx context.Context, s *Session, load *Load) (*Session, error) {
	info := s.info
	m.mu.Lock()
	if old, dup := m.live[info.ID]; dup && !old.isClosed() {
		m.mu.Unlock()
		s.abort()
		return nil, fmt.Errorf("session %s: %w: already live", info.ID, session.ErrExists)
	}
	m.live[info.ID] = s
	m.mu.Unlock()
	err := load.finish(ctx, s)
	if err == nil {
		err = Created.Emit(ctx, m.c, s)
	}
	if err != nil {
		m.forget(s)
		s.abort()
		if r, ok := m.store.(session.Releaser); ok {
			err = errors.Join(err, r.Release(info.ID))
		}
		return nil, fmt.Errorf("session %s: created: %w", info.ID, err)
	}
	return s, nil
}

func (m *Manager) forget(s *Session) {
	m.mu.Lock()
	if m.live[s.info.ID] == s {
		delete(m.live, s.info.ID)
	}
	m.mu.Unlock()
	m.hot.mu.Lock()
	m.hot.removeLocked(s)
	m.hot.mu.Unlock()
}

// Close closes every live session (see [Session.Close]) and returns their
// errors joined.
func (m *Manager) Close(ctx context.Context) error {
	var errs []error
	for _, s := range m.Live() {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}
