package pgstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/vigil-run/vigil/session"
)

// DefaultLeaseTTL is how long a turn lease outlives its holder's last
// renewal when [WithLeaseTTL] is not given; a crashed holder's lease is
// taken over after at most this long.
const DefaultLeaseTTL = 30 * time.Second

// Store keeps session logs in PostgreSQL. It is safe for concurrent use,
// and any number of Stores, in any number of processes, may share one
// database.
type Store struct {
	pool   *pool
	schema string // the schema holding the tables
	// channel and jobsChannel are the NOTIFY channels of that schema:
	// appends on the first, for followers; jobs, releases and cancels on
	// the second, for claims, lease waiters and cancel watchers.
	channel, jobsChannel string
	holder               string // names this store in the leases it holds
	ttl                  time.Duration
	durable              bool
	log                  hclog.Logger
	closeMu              sync.RWMutex // held for reading by renewers, for writing by Close
	closed               bool
	mu                   sync.Mutex
	leases               map[string]*lease // session id → the lease this store holds
	leaseSeq             uint64
	fans                 [2]*fan              // the store's LISTEN connections, one per channel, each from its first waiter
	deferred             map[string]*deferred // session id → the records its claim's end writes (deferred.go)

	// bg ends the store's background work (the fan, claim waiters, the
	// watchers of running claims) when the store closes; watchers counts
	// it.
	bg       context.Context
	stopBG   context.CancelFunc
	watchers sync.WaitGroup
}

// Option configures a [Store].
type Option func(*options)

type options struct {
	conns   int
	schema  string
	ttl     time.Duration
	durable bool
	log     hclog.Logger
	holder  string
}

// WithSchema keeps the tables in the PostgreSQL schema name, created if
// missing, instead of the first schema of the search_path.
func WithSchema(name string) Option { return func(o *options) { o.schema = name } }

// WithMaxConns bounds the store's pooled connections (default 8).
// Besides them the store holds one LISTEN connection, shared by its
// followers, waiting claims, cancel watchers and lease waiters.
func WithMaxConns(n int) Option { return func(o *options) { o.conns = n } }

// WithLeaseTTL sets how long a turn lease lives without renewal (default
// [DefaultLeaseTTL]); a held lease is renewed every third of it.
func WithLeaseTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithDurableAppends makes a live session hand the store each event as it
// is appended, one synchronous commit each, rather than in batches (see
// the package doc); a turn's last events are not deferred to its claim's
// Finish either.
func WithDurableAppends() Option { return func(o *options) { o.durable = true } }

// WithLogger sets the logger of lease renewal problems (default: none).
func WithLogger(l hclog.Logger) Option { return func(o *options) { o.log = l } }

// WithHolder sets the name this store's leases carry (default: host name,
// pid and a random suffix), for a host that wants the [ErrBusy] errors
// other holders get to name it in its own terms. Stores sharing a
// database must have distinct names: a lease is known by its store's name
// and a number (holder#seq), which fencing takes to be unique to it (see
// [Store.Claim]).
func WithHolder(name string) Option { return func(o *options) { o.holder = name } }

// Open connects to the database at dsn (a libpq URL or key=value string,
// see pgx.ParseConfig), creates or migrates the tables and returns the
// store. Close it when done.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	o := options{ttl: DefaultLeaseTTL, conns: 8}
	for _, opt := range opts {
		opt(&o)
	}
	if o.ttl <= 0 {
		return nil, fmt.Errorf("pgstore: lease TTL %v must be positive", o.ttl)
	}
	if o.conns < 1 {
		return nil, fmt.Errorf("pgstore: max conns %d must be at least 1", o.conns)
	}
	if o.log == nil {
		o.log = hclog.NewNullLogger()
	}
	if o.holder == "" {
		o.holder = defaultHolder()
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if o.schema != "" {
		cfg.RuntimeParams["search_path"] = pgx.Identifier{o.schema}.Sanitize()
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, session.StoreError("pgstore", "connect", "", err)
	}
	current, err := migrate(ctx, conn, o.schema)
	_ = conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return nil, session.StoreError("pgstore", "schema", "", err)
	}
	if o.schema == "" {
		// Pin the schema the tables were found in, so every connection
		// agrees with the channel name even if search_path changes.
		cfg.RuntimeParams["search_path"] = pgx.Identifier{current}.Sanitize()
	}
	bg, stopBG := context.WithCancel(context.Background())
	s := &Store{
		pool: newPool(cfg, o.conns), schema: current, channel: channelName(eventsPrefix, current), jobsChannel: channelName(jobsPrefix, current), holder: o.holder,
		ttl: o.ttl, durable: o.durable, log: o.log, leases: map[string]*lease{},
		bg: bg, stopBG: stopBG, deferred: map[string]*deferred{},
	}
	return s, nil
}

// channelName is a NOTIFY channel (prefix: eventsPrefix or jobsPrefix)
// of the tables in schema: one per schema, so stores in other schemas of
// the database are not woken.
func channelName(prefix, schema string) string {
	name := prefix + schema
	if len(name) > 63 { // NAMEDATALEN-1
		sum := sha256.Sum256([]byte(schema))
		name = prefix + hex.EncodeToString(sum[:12])
	}
	return name
}

// The prefixes of a schema's two channels. A process LISTENs only to
// those it waits on: an API process streaming logs is not woken by the
// queue, nor a worker by every append (each notification costs every
// listening process a wake-up, and PostgreSQL a delivery to each).
const (
	eventsPrefix = "vigil:"
	jobsPrefix   = "vigil.jobs:"
)

func defaultHolder() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Schema returns the PostgreSQL schema that holds the store's tables,
// for a host that reports where its sessions live: without [WithSchema]
// it is the connection's search path's, resolved by Open.
func (s *Store) Schema() string { return s.schema }

// Close releases the leases the store holds (those of running claims too,
// whose jobs another worker may then claim again) and closes its
// connections. A Claim waiting returns.
func (s *Store) Close() error {
	s.shutdown(true)
	return nil
}

// shutdown closes the store, releasing its leases or, when not release,
// leaving them to expire as a crashed process's do.
func (s *Store) shutdown(release bool) {
	s.mu.Lock() // no watcher starts once stopped (see watch)
	s.stopBG()
	s.mu.Unlock()
	s.watchers.Wait()
	s.mu.Lock()
	held := make([]*lease, 0, len(s.leases))
	for _, l := range s.leases {
		held = append(held, l)
	}
	s.mu.Unlock()
	for _, l := range held {
		if release {
			l.release()
		} else {
			l.stopRenewing()
		}
	}
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return
	}
	s.closed = true
	s.closeMu.Unlock()
	s.pool.close()
}

func checkID(id string) error {
	if !session.ValidID(id) {
		return session.InvalidID(id)
	}
	return nil
}

// isUniqueViolation reports whether err is a unique_violation.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// Create implements [session.Store].
func (s *Store) Create(ctx context.Context, info session.Info) error {
	if err := checkID(info.ID); err != nil {
		return session.StoreError("pgstore", "create", "", err)
	}
	err := s.pool.with(ctx, func(c *pgx.Conn) error { return s.insertSession(ctx, c, info, 0) })
	if err != nil {
		return session.StoreError("pgstore", "create", info.ID, err)
	}
	return nil
}

// exec runs one statement on a pooled connection.
func (s *Store) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	err := s.pool.with(ctx, func(c *pgx.Conn) error {
		var err error
		tag, err = c.Exec(ctx, sql, args...)
		return err
	})
	return tag, err
}

// queryRow runs a one-row query on a pooled connection and scans it into
// dest (pgx.ErrNoRows when there is no row).
func (s *Store) queryRow(ctx context.Context, dest []any, sql string, args ...any) error {
	return s.pool.with(ctx, func(c *pgx.Conn) error { return c.QueryRow(ctx, sql, args...).Scan(dest...) })
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// insertSession adds the row of a new log of length next.
func (s *Store) insertSession(ctx context.Context, db execer, info session.Info, next int64) error {
	if info.Version == 0 {
		info.Version = session.Version
	}
	header := session.AppendHeaderLine(nil, info)
	header = header[:len(header)-1]
	var pid *string
	var pseq *int64
	if info.Parent != nil {
		pid, pseq = &info.Parent.ID, &info.Parent.Seq
	}
	tag, err := db.Exec(ctx, `INSERT INTO vigil_sessions (id, header, created, parent_id, parent_seq, next)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
		info.ID, header, info.Created, pid, pseq, next)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return session.ErrExists
	}
	return nil
}

// lines returns the records' canonical lines, without newlines, sharing
// one buffer.
func lines(records []session.Record) [][]byte {
	n := 0
	for _, r := range records {
		n += r.LineLen()
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(records))
	for i, r := range records {
		start := len(buf)
		buf = r.AppendLine(buf)
		out[i] = buf[start : len(buf)-1 : len(buf)-1]
	}
	return out
}

// asyncTag starts the text of each statement that commits asynchronously
// (its transaction sets synchronous_commit off), so that a reader of
// pg_stat_statements (bench/load) can tell the synchronous commits from
// the others: the comment is kept in the statement's text.
const asyncTag = "/* vigil: asynchronous commit */ "

// syncSetting is a CTE's expression that commits the statement's
// transaction synchronously even on a server whose synchronous_commit is
// off ('local' then): an event row visible to another process is durable,
// so a follower gives what it reads at once.
const syncSetting = `set_config('synchronous_commit',
	CASE current_setting('synchronous_commit') WHEN 'off' THEN 'local' ELSE current_setting('synchronous_commit') END, true)`

// appendSQL appends a batch in one statement: the session row's length
// moves from $2 to $2+n only if it is $2 and, under a lease of epoch $4
// and holder name $6, the session is still at that epoch under that
// lease (no lease was taken since, nor one of the same epoch after this
// one's claim was lost in a crash), or,
// without a lease ($4 = 0), no holder has a live lease; the events are
// inserted only if it moved, and then the session's followers are
// notified, at the commit (the statement's one notification). The commit
// is synchronous (syncSetting), and so makes every event of the session
// durable, those staged before too (stagedSQL): their commits precede it
// in the WAL.
//
// The epoch is compared on the locked row: a lease taken concurrently
// moves the epoch under the same row lock, so an append either commits
// before the new holder's lease (which then loads it) or is fenced.
var appendSQL = `WITH ` + appendCTEs(1, 2, 3, 4, 6, 5, false) + `
SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM ins), (SELECT count(*) FROM n), (SELECT count(v) FROM cfg)`

// stagedSQL is appendSQL committed asynchronously, without a
// notification: the session's volatile column keeps the seq of the first
// event not yet durable, and followers read up to it (see stage.go).
var stagedSQL = asyncTag + `WITH ` + appendCTEs(1, 2, 3, 4, 6, 5, true) + `
SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM ins), (SELECT count(*) FROM n), (SELECT count(v) FROM cfg)`

// appendCTEs are appendSQL's CTEs (cfg, s, ins, n), with the session id,
// the seq expected, the lines, the epoch, the lease's holder name and the
// channel in the parameters numbered so, for a statement that appends and
// does more; staged, stagedSQL's.
func appendCTEs(id, next, lines, epoch, token, channel int, staged bool) string {
	cfg, volatile, notify := syncSetting, `NULL`, `SELECT pg_notify($%[5]d::text, 'e ' || s.next || ' ' || $%[1]d) FROM s`
	if staged {
		cfg, volatile, notify = `set_config('synchronous_commit', 'off', true)`, `coalesce(volatile, next)`, `SELECT $%[5]d::text WHERE false`
	}
	return fmt.Sprintf(`cfg AS (SELECT `+cfg+` AS v),
s AS (
	UPDATE vigil_sessions SET next = next + cardinality($%[3]d::bytea[]), volatile = `+volatile+`
	WHERE id = $%[1]d AND next = $%[2]d
	  AND CASE WHEN $%[4]d::bigint > 0 THEN epoch = $%[4]d AND holder = $%[6]d::text
	      ELSE NOT EXISTS (SELECT 1 FROM vigil_leases l
	                       WHERE l.session_id = $%[1]d AND l.expires > clock_timestamp()) END
	RETURNING next
),
ins AS (
	INSERT INTO vigil_events (session_id, seq, line)
	SELECT $%[1]d, $%[2]d + u.o - 1, u.line FROM s, unnest($%[3]d::bytea[]) WITH ORDINALITY AS u(line, o)
	RETURNING 1
),
n AS (
	`+notify+`
)`, id, next, lines, epoch, channel, token)
}

// Append implements [session.Store]. The batch is written in one
// statement, all or nothing. Besides the errors of the interface, a live
// lease of another holder is an [ErrBusy] error; while this store holds
// the session's lease, the append is fenced by its epoch (see
// [Store.AppendFenced]), also once the lease was found lost, until it is
// released.
func (s *Store) Append(ctx context.Context, id string, next int64, records []session.Record) error {
	return s.AppendFenced(ctx, id, s.heldEpoch(id), next, records)
}

// AppendFenced implements [session.Fencer]: [Store.Append] under the
// lease of epoch, refused with an error wrapping [session.ErrFenced]
// when a lease was taken on id since. Epoch 0 appends without a lease,
// refused with [ErrBusy] while any holder has a live one.
func (s *Store) AppendFenced(ctx context.Context, id string, epoch, next int64, records []session.Record) error {
	if err := checkID(id); err != nil {
		return session.StoreError("pgstore", "append", "", err)
	}
	if err := session.CheckSeqs(next, records); err != nil {
		return session.StoreError("pgstore", "append", id, err)
	}
	if epoch < 0 {
		return fmt.Errorf("pgstore: append %s: %w: epoch %d", id, session.ErrFenced, epoch)
	}
	f := s.fenceOf(id, epoch)
	if len(records) == 0 {
		if err := s.refusal(ctx, id, f, next, true); err != nil {
			return session.StoreError("pgstore", "append", id, err)
		}
		return nil
	}
	if err := s.write(ctx, id, f, next, lines(records)); err != nil {
		return session.StoreError("pgstore", "append", id, err)
	}
	return nil
}

// write appends batch at next under the lease of fence f (the zero
// fence: none) in one statement and one synchronous commit (appendSQL).
func (s *Store) write(ctx context.Context, id string, f fence, next int64, batch [][]byte) error {
	return s.writeWith(ctx, appendSQL, id, f, next, batch)
}

// writeWith is write by sql, appendSQL or stagedSQL.
func (s *Store) writeWith(ctx context.Context, sql, id string, f fence, next int64, batch [][]byte) error {
	var moved, inserted, notified, cfg int64
	retried := false
	err := s.pool.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, sql, id, next, batch, f.epoch, s.channel, f.token).Scan(&moved, &inserted, &notified, &cfg)
	})
	if err != nil && errors.Is(err, errConnLost) && ctx.Err() == nil {
		// The connection broke (a backend killed, a server restarting):
		// once more on another. The batch may have committed before the
		// break; the seq check refuses it then, and the log shows it.
		retried = true
		err = s.queryRow(ctx, []any{&moved, &inserted, &notified, &cfg},
			sql, id, next, batch, f.epoch, s.channel, f.token)
	}
	if err != nil {
		if isUniqueViolation(err) {
			// Only possible if the events table was written around the
			// length: the seq is taken.
			return fmt.Errorf("%w: seq already stored", session.ErrConflict)
		}
		return err
	}
	if moved == 1 {
		if inserted != int64(len(batch)) {
			return fmt.Errorf("inserted %d of %d events", inserted, len(batch))
		}
		return nil
	}
	if retried && s.stored(ctx, id, next, batch) {
		return nil // the first try committed
	}
	if err := s.refusal(ctx, id, f, next, false); err != nil {
		return err
	}
	// The state that refused the append changed before we looked: it
	// was a conflict all the same, and the writer must reload.
	return fmt.Errorf("%w: the log or its lease changed concurrently", session.ErrConflict)
}

// stored reports whether the log of id holds batch from seq next on,
// byte for byte: an append whose connection broke after its commit.
func (s *Store) stored(ctx context.Context, id string, next int64, batch [][]byte) bool {
	var got [][]byte
	err := s.pool.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT line FROM vigil_events WHERE session_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq`,
			id, next, next+int64(len(batch)))
		if err != nil {
			return err
		}
		got, err = pgx.CollectRows(rows, pgx.RowTo[[]byte])
		return err
	})
	if err != nil || len(got) != len(batch) {
		return false
	}
	for i := range got {
		if !bytes.Equal(got[i], batch[i]) {
			return false
		}
	}
	return true
}

// refusal explains why an append under fence f at next cannot go
// through: ErrNotFound, ErrFenced, ErrConflict or ErrBusy; nil when it
// could (now). emptyOK skips the lease check of an unleased append, for
// an empty batch, which writes nothing.
func (s *Store) refusal(ctx context.Context, id string, f fence, next int64, emptyOK bool) error {
	var length, current int64
	var holder, epochHolder *string
	var left *float64
	err := s.queryRow(ctx, []any{&length, &current, &holder, &left, &epochHolder},
		`SELECT s.next, s.epoch, l.holder, extract(epoch FROM l.expires - clock_timestamp())::float8, s.holder
		FROM vigil_sessions s LEFT JOIN vigil_leases l ON l.session_id = s.id AND l.expires > clock_timestamp()
		WHERE s.id = $1`, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return session.ErrNotFound
	}
	if err != nil {
		return err
	}
	epoch := f.epoch
	if epoch > 0 && epoch != current {
		return fencedError(id, epoch, current)
	}
	if epoch > 0 && (epochHolder == nil || *epochHolder != f.token) {
		return fmt.Errorf("%w: %s: the lease of epoch %d is not the one that set the session's epoch (its claim was lost, or this store never held it)",
			session.ErrFenced, id, epoch)
	}
	if length != next {
		return fmt.Errorf("%w: the log continues at %d, not %d", session.ErrConflict, length, next)
	}
	if epoch == 0 && !emptyOK && holder != nil {
		return busyError(id, *holder, *left)
	}
	return nil
}

// Load implements [session.Store]. The log is decoded and validated by
// [session.DecodeOwned], exactly as the jsonl store's files are.
func (s *Store) Load(ctx context.Context, id string) (*session.Log, error) {
	return s.LoadEach(ctx, id, nil)
}

// LoadEach implements [session.EachLoader]: Load that hands each record
// to each as the log is decoded (see [session.DecodeOwnedEach]).
func (s *Store) LoadEach(ctx context.Context, id string, each func(session.Record)) (*session.Log, error) {
	if err := checkID(id); err != nil {
		return nil, session.StoreError("pgstore", "load", "", err)
	}
	data, err := s.export(ctx, id)
	if err != nil {
		return nil, session.StoreError("pgstore", "load", id, err)
	}
	// The rows' bytes were copied into data, which is the log's now: its
	// records hold their lines there, once. The buffer grew by doubling:
	// a log kept open should not hold its spare room.
	if cap(data)-len(data) > len(data)/8 {
		data = bytes.Clone(data)
	}
	log, err := session.DecodeOwnedEach(data, each)
	if err != nil {
		return nil, session.StoreError("pgstore", "load", id, err)
	}
	if log.Info.ID != id {
		return nil, fmt.Errorf("pgstore: load %s: %w: the header names %s", id, session.ErrCorrupt, log.Info.ID)
	}
	return log, nil
}

// Info implements [session.InfoReader]: it reads the session's header
// line only.
func (s *Store) Info(ctx context.Context, id string) (session.Info, error) {
	if err := checkID(id); err != nil {
		return session.Info{}, session.StoreError("pgstore", "info", "", err)
	}
	var header []byte
	err := s.queryRow(ctx, []any{&header}, `SELECT header FROM vigil_sessions WHERE id = $1`, id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = session.ErrNotFound
	}
	if err != nil {
		return session.Info{}, session.StoreError("pgstore", "info", id, err)
	}
	info, err := decodeHeader(header)
	if err != nil {
		return session.Info{}, session.StoreError("pgstore", "info", id, err)
	}
	if info.ID != id {
		return session.Info{}, fmt.Errorf("pgstore: info %s: %w: the header names %s", id, session.ErrCorrupt, info.ID)
	}
	return info, nil
}

// Export returns the log of id in the JSONL format, byte for byte what
// the jsonl store would hold, without decoding it.
func (s *Store) Export(ctx context.Context, id string) ([]byte, error) {
	if err := checkID(id); err != nil {
		return nil, session.StoreError("pgstore", "export", "", err)
	}
	data, err := s.export(ctx, id)
	if err != nil {
		return nil, session.StoreError("pgstore", "export", id, err)
	}
	return data, nil
}

// export reads the header and every event in one round trip. Events are
// immutable once committed and each append commits atomically, so the
// two statements need no common snapshot.
func (s *Store) export(ctx context.Context, id string) (out []byte, err error) {
	err = s.pool.with(ctx, func(c *pgx.Conn) error {
		out, err = exportConn(ctx, c, id)
		return err
	})
	return out, err
}

func exportConn(ctx context.Context, c *pgx.Conn, id string) ([]byte, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT header, next FROM vigil_sessions WHERE id = $1`, id)
	b.Queue(`SELECT line FROM vigil_events WHERE session_id = $1 ORDER BY seq`, id)
	res := c.SendBatch(ctx, b)
	defer res.Close()
	var header []byte
	var next int64
	if err := res.QueryRow().Scan(&header, &next); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, session.ErrNotFound
		}
		return nil, err
	}
	rows, err := res.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	buf := bytes.NewBuffer(make([]byte, 0, len(header)+1+int(next)*160))
	buf.Write(header)
	buf.WriteByte('\n')
	for rows.Next() {
		buf.Write(rows.RawValues()[0])
		buf.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeHeader decodes a stored header line: a line of another version
// is refused as such, any other defect is corruption of line 1.
func decodeHeader(line []byte) (session.Info, error) {
	info, err := session.DecodeHeader(line)
	if err != nil && !errors.Is(err, session.ErrVersion) {
		err = &session.CorruptError{Line: 1, Err: err}
	}
	return info, err
}

// List implements [session.Store]: sorted by id, bytewise. A session
// whose header cannot be read is left out and named in the
// [*session.ListError] returned with the others.
func (s *Store) List(ctx context.Context) ([]session.Info, error) {
	var out []session.Info
	var bad []session.EntryError
	err := s.pool.with(ctx, func(c *pgx.Conn) error {
		out, bad = nil, nil
		rows, err := c.Query(ctx, `SELECT id, header FROM vigil_sessions ORDER BY id COLLATE "C"`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			raw := rows.RawValues()
			info, err := decodeHeader(raw[1])
			if err != nil {
				bad = append(bad, session.EntryError{Name: "session " + string(raw[0]), Err: err})
				continue
			}
			out = append(out, info)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, session.StoreError("pgstore", "list", "", err)
	}
	if len(bad) > 0 {
		return out, &session.ListError{Entries: bad}
	}
	return out, nil
}

// Fork implements [session.Store]: the child gets its own copy of the
// inherited events (they are immutable, so the copy never diverges).
func (s *Store) Fork(ctx context.Context, info session.Info, tail []session.Record) error {
	if info.Parent == nil {
		return fmt.Errorf("pgstore: fork %s: no parent", info.ID)
	}
	if err := checkID(info.ID); err != nil {
		return session.StoreError("pgstore", "fork", "", err)
	}
	at := info.Parent.Seq
	if err := session.CheckSeqs(at+1, tail); err != nil {
		return session.StoreError("pgstore", "fork", info.ID, err)
	}
	err := s.pool.with(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			var length int64
			err := tx.QueryRow(ctx, `SELECT next FROM vigil_sessions WHERE id = $1`, info.Parent.ID).Scan(&length)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("parent %s: %w", info.Parent.ID, session.ErrNotFound)
			}
			if err != nil {
				return err
			}
			if at < -1 || at >= length {
				return fmt.Errorf("%w: parent %s has seqs 0..%d, not %d", session.ErrSeqGap, info.Parent.ID, length-1, at)
			}
			next := at + 1 + int64(len(tail))
			if err := s.insertSession(ctx, tx, info, next); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO vigil_events (session_id, seq, line)
			SELECT $1, seq, line FROM vigil_events WHERE session_id = $2 AND seq <= $3`,
				info.ID, info.Parent.ID, at); err != nil {
				return err
			}
			if len(tail) > 0 {
				if _, err := tx.Exec(ctx, `INSERT INTO vigil_events (session_id, seq, line)
				SELECT $1, $2 + u.o - 1, u.line FROM unnest($3::bytea[]) WITH ORDINALITY AS u(line, o)`,
					info.ID, at+1, lines(tail)); err != nil {
					return err
				}
			}
			_, err = tx.Exec(ctx, `SELECT pg_notify($1, 'e ' || $2::bigint || ' ' || $3)`, s.channel, next, info.ID)
			return err
		})
	})
	if err != nil {
		return session.StoreError("pgstore", "fork", info.ID, err)
	}
	return nil
}

// Flush implements [session.Flusher]: it returns once every append
// committed so far, by any process, is durable. Every statement that
// writes events commits synchronously (see syncSetting), but for staged
// ones (see stage.go): Flush writes the records deferred to this store's
// claim, and makes what was staged durable.
func (s *Store) Flush(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return session.StoreError("pgstore", "flush", "", err)
	}
	if err := s.writeDeferred(ctx, id); err != nil {
		return session.StoreError("pgstore", "flush", id, err)
	}
	exists, err := s.makeDurable(ctx, id)
	if err != nil {
		return session.StoreError("pgstore", "flush", id, err)
	}
	if !exists {
		return session.NotFound(id)
	}
	return nil
}

// AppendsInBatches implements [session.Batcher]: a live session under its
// lease hands the store a step's records as one append, one statement and
// one synchronous commit, unless [WithDurableAppends] asked for every
// record to be written as it is appended.
func (s *Store) AppendsInBatches() bool { return !s.durable }

var (
	_ session.Batcher = (*Store)(nil)
	_ session.Store   = (*Store)(nil)
	_ session.Flusher = (*Store)(nil)
	_ session.Fencer  = (*Store)(nil)
	_ session.Queue   = (*Store)(nil)
)
