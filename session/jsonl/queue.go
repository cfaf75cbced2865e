package jsonl

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/vigil-run/vigil/session"
)

// The queue's files, in the directory queueDir of the store's directory.
const (
	queueDir    = ".queue"
	journalName = "journal"
	lockName    = "lock"
	ownersDir   = "owners"
)

// pollInterval is how often a waiting Claim, a claim's cancel watch and a
// Follow look for what other processes did; changes made in this process
// wake them at once.
const pollInterval = 250 * time.Millisecond

// finishedLimit bounds the finished jobs kept (a variable for the tests
// of compaction).
var finishedLimit = session.FinishedJobLimit

// compactLines is the journal length from which a change compacts it,
// when it is more than four times the lines the unfinished jobs need.
var compactLines = 1024

// op is a journal line: one change of the queue.
type op struct {
	Op string `json:"op"` // enqueue, claim, start, release, finish, drop, cancel, forget; job and seq in a compacted journal
	ID string `json:"id,omitempty"`
	// enqueue and job
	Session string    `json:"session,omitempty"`
	Kind    string    `json:"kind,omitempty"`
	Call    string    `json:"call,omitempty"`
	Input   []byte    `json:"input,omitempty"` // base64: kept byte for byte
	At      time.Time `json:"at,omitzero"`     // also when a start, finish or drop happened
	// job
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"` // a finished job's line
	// finish and a finished job's line (a drop is cancelled)
	Outcome *session.Outcome `json:"outcome,omitempty"`
	// claim and job
	Worker string `json:"worker,omitempty"`
	Owner  string `json:"owner,omitempty"`
	// start and job
	Base *int64 `json:"base,omitempty"`
	// job
	Attempts  int  `json:"attempts,omitempty"`
	Cancelled bool `json:"cancelled,omitempty"`
	// seq: the last job number given
	N int64 `json:"n,omitempty"`
}

// qjob is an unfinished job as the journal says.
type qjob struct {
	job       session.Job // State is derived, not kept
	owner     string      // the claiming store's owner token, "" when not claimed
	cancelled bool
}

// jqueue is a store's view of the directory's queue: the journal replayed
// so far, and the claims this store holds.
type jqueue struct {
	s    *Store
	dir  string // the queue directory
	path string // the journal

	mu     sync.Mutex // guards what follows, and serializes this store's journal writes
	lock   *flock.Flock
	fi     os.FileInfo // the journal file replayed, nil before any
	off    int64       // bytes of it replayed
	lines  int
	seq    int64
	jobs   []*qjob // unfinished, oldest first
	done   []*qjob // finished, in the order they finished (see retire)
	owner  string  // this store's owner token
	olock  *flock.Flock
	dead   map[string]bool // owners found dead: they stay dead
	claims map[string]*claim
	watch  bool          // the cancel watch runs
	stop   chan struct{} // closed when the store closes
	closed bool
}

func newQueue(s *Store) *jqueue {
	dir := filepath.Join(s.dir, queueDir)
	return &jqueue{
		s: s, dir: dir, path: filepath.Join(dir, journalName),
		owner:  newOwner(),
		dead:   map[string]bool{},
		claims: map[string]*claim{},
		stop:   make(chan struct{}),
	}
}

func newOwner() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// reset forgets the replayed journal (it was compacted: replay it anew).
func (q *jqueue) reset() {
	q.fi, q.off, q.lines, q.seq, q.jobs, q.done = nil, 0, 0, 0, nil, nil
}

// catchUp replays what was appended to the journal since the last call.
// It needs no file lock: it replays whole lines only, and a compaction
// replaces the file, which it notices. q.mu is held.
func (q *jqueue) catchUp() error {
	f, err := os.Open(q.path)
	if errors.Is(err, fs.ErrNotExist) {
		q.reset()
		return nil
	}
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	if q.fi == nil || !os.SameFile(fi, q.fi) {
		q.reset()
	}
	q.fi = fi
	if fi.Size() <= q.off {
		return nil
	}
	data, err := io.ReadAll(io.NewSectionReader(f, q.off, fi.Size()-q.off))
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	for {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return nil // a line being written, or torn by a crash
		}
		var o op
		if err := json.Unmarshal(data[:nl], &o); err != nil {
			return fmt.Errorf("queue: %s at byte %d: %w: %w", q.path, q.off, session.ErrCorrupt, err)
		}
		q.apply(o)
		q.off += int64(nl + 1)
		q.lines++
		data = data[nl+1:]
	}
}

func (q *jqueue) find(id string) *qjob {
	for _, j := range q.jobs {
		if j.job.ID == id {
			return j
		}
	}
	return nil
}

func jobNumber(id string) int64 {
	n, _ := strconv.ParseInt(id, 10, 64)
	return n
}

// apply makes a journal line's change. Lines naming a job that is gone
// change nothing.
func (q *jqueue) apply(o op) {
	switch o.Op {
	case "seq":
		q.seq = max(q.seq, o.N)
		return
	case "forget": // the session was deleted
		q.forget(o.Session)
		return
	case "enqueue", "job":
		base := int64(-1)
		if o.Base != nil {
			base = *o.Base
		}
		j := &qjob{job: session.Job{
			ID: o.ID, Session: o.Session, Kind: o.Kind, Call: o.Call, Input: o.Input, Enqueued: o.At,
			Base: base, Attempts: o.Attempts, Worker: o.Worker, Started: o.Started,
		}, owner: o.Owner, cancelled: o.Cancelled}
		q.seq = max(q.seq, jobNumber(o.ID))
		if o.Op == "job" && o.Outcome != nil {
			j.job.Outcome, j.job.Finished = *o.Outcome, o.Finished
			q.done = append(q.done, j)
			return
		}
		q.jobs = append(q.jobs, j)
		q.signal(j)
		return
	}
	j := q.find(o.ID)
	if j == nil {
		return
	}
	switch o.Op {
	case "claim":
		j.job.Attempts++
		j.job.Worker, j.owner = o.Worker, o.Owner
	case "start":
		if j.job.Base < 0 && o.Base != nil {
			j.job.Base, j.job.Started = *o.Base, o.At
		}
	case "release":
		j.job.Worker, j.owner = "", ""
	case "cancel":
		j.cancelled = true
		q.signal(j)
	case "finish":
		out := session.Outcome{State: session.JobDone}
		if o.Outcome != nil {
			out = *o.Outcome
		}
		q.retire(j, out, o.At)
	case "drop":
		q.retire(j, session.Outcome{State: session.JobCancelled}, o.At)
	}
}

// retire moves unfinished j to the finished jobs with outcome out, and
// forgets the finished jobs past their retention (by this process's
// clock: another's may keep one a moment longer). q.mu is held.
func (q *jqueue) retire(j *qjob, out session.Outcome, at time.Time) {
	q.jobs = slices.DeleteFunc(q.jobs, func(o *qjob) bool { return o == j })
	j.job.Outcome, j.job.Finished = out, at
	q.done = append(q.done, j)
	q.done = slices.Delete(q.done, 0, session.Expired(q.done, func(j *qjob) time.Time { return j.job.Finished }, finishedLimit))
}

// taken reports whether a job of session sid decides call: unfinished
// (not cancelled and gone), or finished done. q.mu is held.
func (q *jqueue) taken(sid, call string) bool {
	for _, j := range q.jobs {
		if j.job.Session == sid && j.job.Call == call && !q.gone(j) {
			return true
		}
	}
	for _, j := range q.done {
		if j.job.Session == sid && j.job.Call == call && j.job.Outcome.State == session.JobDone {
			return true
		}
	}
	return false
}

// signal closes the Cancelled channel of this store's claim of j, if j
// was cancelled.
func (q *jqueue) signal(j *qjob) {
	if c := q.claims[j.job.ID]; c != nil && j.cancelled && j.owner == q.owner {
		c.once.Do(func() { close(c.cancel) })
	}
}

// running reports whether a live store holds j's claim: this one, or one
// whose owner file is still locked (its process is alive and it has not
// closed). q.mu is held.
func (q *jqueue) running(j *qjob) bool {
	switch {
	case j.owner == "":
		return false
	case j.owner == q.owner:
		return q.claims[j.job.ID] != nil
	case q.dead[j.owner]:
		return false
	}
	if ownerAlive(filepath.Join(q.dir, ownersDir, j.owner)) {
		return true
	}
	q.dead[j.owner] = true
	return false
}

// ownerAlive reports whether the owner file at path is locked by its
// store. Checkers take a shared lock, so they never stand in each other's
// way (nor in the owner's, which locked it before it claimed anything).
func ownerAlive(path string) bool {
	l := flock.New(path, flock.SetFlag(os.O_RDONLY))
	defer l.Close()
	ok, err := l.TryRLock()
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return err != nil || !ok // unsure: alive, so that a job never runs twice
}

// gone reports whether j is as good as finished: cancelled, and its
// claim has ended with its store. q.mu is held.
func (q *jqueue) gone(j *qjob) bool { return j.cancelled && !q.running(j) }

func (q *jqueue) view(j *qjob) session.Job {
	v := j.job
	v.Input = slices.Clone(v.Input)
	if v.Outcome.State != "" {
		v.State = v.Outcome.State
		return v
	}
	v.State = session.JobQueued
	if q.running(j) {
		v.State = session.JobRunning
	} else {
		v.Worker = ""
	}
	return v
}

// locked runs fn under the journal's file lock, with the journal replayed
// to its end. q.mu is held.
func (q *jqueue) locked(fn func() error) error {
	if q.closed {
		return session.ErrClosed
	}
	if q.lock == nil {
		if err := os.MkdirAll(q.dir, 0o755); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
		q.lock = flock.New(filepath.Join(q.dir, lockName), flock.SetPermissions(0o644))
	}
	if err := q.lock.Lock(); err != nil {
		return fmt.Errorf("queue: lock: %w", err)
	}
	defer q.lock.Unlock()
	if err := q.catchUp(); err != nil {
		return err
	}
	return fn()
}

// write appends ops to the journal, fsyncs it and applies them. q.mu and
// the file lock are held, the journal replayed.
func (q *jqueue) write(ops ...op) error {
	if len(ops) == 0 {
		return nil
	}
	var buf []byte
	for _, o := range ops {
		b, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("queue: %w", err)
		}
		buf = append(append(buf, b...), '\n')
	}
	created := q.fi == nil
	f, err := os.OpenFile(q.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil && (q.fi == nil && fi.Size() != 0 || q.fi != nil && !os.SameFile(fi, q.fi)) {
		// Every writer holds the lock: this is not a journal of ours.
		err = errors.New("the journal changed under its lock")
	}
	if err == nil && fi.Size() != q.off {
		// Bytes past the last whole line: a write torn by a crash (this
		// store holds the lock, so nobody is writing). Cut them, or the
		// next line would be glued to them.
		err = f.Truncate(q.off)
	}
	if err == nil {
		_, err = f.WriteAt(buf, q.off)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil && created {
		err = syncDir(q.dir)
	}
	if err != nil {
		return fmt.Errorf("queue: write %s: %w", q.path, err)
	}
	// Only once durable: a failed write changes nothing.
	for _, o := range ops {
		q.apply(o)
	}
	q.off += int64(len(buf))
	q.lines += len(ops)
	if fi, err := f.Stat(); err == nil {
		q.fi = fi
	}
	q.s.note.wakeQueue()
	if q.lines > compactLines && q.lines > 4*(len(q.jobs)+len(q.done)+1) {
		_ = q.compact() // a failure leaves the long journal, still valid
	}
	return nil
}

// compact replaces the journal by one that says only what is unfinished.
// q.mu and the file lock are held.
func (q *jqueue) compact() error {
	ops := []op{{Op: "seq", N: q.seq}}
	for _, j := range slices.Concat(q.done, q.jobs) {
		o := op{Op: "job", ID: j.job.ID, Session: j.job.Session, Kind: j.job.Kind, Call: j.job.Call, Input: j.job.Input,
			At: j.job.Enqueued, Attempts: j.job.Attempts, Worker: j.job.Worker, Owner: j.owner, Cancelled: j.cancelled,
			Started: j.job.Started}
		if j.job.Base >= 0 {
			o.Base = &j.job.Base
		}
		if j.job.Outcome.State != "" {
			out := j.job.Outcome
			o.Outcome, o.Finished, o.Owner = &out, j.job.Finished, ""
		}
		ops = append(ops, o)
	}
	var buf []byte
	for _, o := range ops {
		b, err := json.Marshal(o)
		if err != nil {
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	tmp := q.path + ".tmp"
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		return err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, q.path); err != nil {
		return err
	}
	if err := syncDir(q.dir); err != nil {
		return err
	}
	q.fi, q.off, q.lines = fi, int64(len(buf)), len(ops)
	return nil
}

// ensureOwner creates and locks this store's owner file, whose lock tells
// the other stores that its claims are alive; it removes the files of
// owners that died a while ago. q.mu is held.
func (q *jqueue) ensureOwner() error {
	if q.olock != nil {
		return nil
	}
	dir := filepath.Join(q.dir, ownersDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	l := flock.New(filepath.Join(dir, q.owner), flock.SetPermissions(0o644))
	if ok, err := l.TryLock(); err != nil || !ok {
		return fmt.Errorf("queue: lock the owner file: %w (locked: %v)", err, !ok)
	}
	q.olock = l
	// An owner file is created an instant before it is locked: a young
	// one is left alone (a dead owner's is harmless, just litter).
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if fi, err := e.Info(); err != nil || e.Name() == q.owner || time.Since(fi.ModTime()) < staleTemp {
				continue
			}
			if !ownerAlive(p) {
				_ = os.Remove(p)
			}
		}
	}
	return nil
}

// sessionExists checks id names a stored session.
func (s *Store) sessionExists(id string) error {
	if err := s.check(id); err != nil {
		return err
	}
	if _, err := os.Stat(s.Path(id)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return session.ErrNotFound
		}
		return err
	}
	return nil
}

// queue returns the store's queue, made at first use.
func (s *Store) queue() (*jqueue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, session.ErrClosed
	}
	if s.q == nil {
		s.q = newQueue(s)
	}
	return s.q, nil
}

// Enqueue implements [session.Queue]: the job is in the journal, fsynced,
// when it returns.
func (s *Store) Enqueue(ctx context.Context, in session.Job) (session.Job, int, error) {
	if err := s.sessionExists(in.Session); err != nil {
		return session.Job{}, 0, session.StoreError("jsonl", "enqueue", in.Session, err)
	}
	q, err := s.queue()
	if err != nil {
		return session.Job{}, 0, session.StoreError("jsonl", "enqueue", in.Session, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	var out session.Job
	ahead := 0
	err = q.locked(func() error {
		if in.Call != "" && q.taken(in.Session, in.Call) {
			return fmt.Errorf("call %s: %w", in.Call, session.ErrDuplicateJob)
		}
		for _, j := range q.jobs {
			if j.job.Session == in.Session && !q.gone(j) {
				ahead++
			}
		}
		id := fmt.Sprintf("%016d", q.seq+1)
		if err := q.write(op{Op: "enqueue", ID: id, Session: in.Session, Kind: in.Kind, Call: in.Call,
			Input: slices.Clone(in.Input), At: time.Now().UTC().Round(0)}); err != nil {
			return err
		}
		out = q.view(q.find(id))
		return nil
	})
	if err != nil {
		return session.Job{}, 0, session.StoreError("jsonl", "enqueue", in.Session, err)
	}
	return out, ahead, nil
}

// Jobs implements [session.Queue].
func (s *Store) Jobs(ctx context.Context, id string) ([]session.Job, error) {
	q, err := s.queue()
	if err != nil {
		return nil, session.StoreError("jsonl", "jobs", id, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.catchUp(); err != nil {
		return nil, session.StoreError("jsonl", "jobs", id, err)
	}
	var out []session.Job
	for _, j := range q.jobs {
		if j.job.Session == id && !q.gone(j) {
			out = append(out, q.view(j))
		}
	}
	return out, nil
}

// Job implements [session.Queue].
func (s *Store) Job(ctx context.Context, id string) (session.Job, error) {
	q, err := s.queue()
	if err != nil {
		return session.Job{}, session.StoreError("jsonl", "job "+id, "", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.catchUp(); err != nil {
		return session.Job{}, session.StoreError("jsonl", "job "+id, "", err)
	}
	for _, list := range [][]*qjob{q.jobs, q.done} {
		for _, j := range list {
			if j.job.ID != id {
				continue
			}
			if q.gone(j) {
				j = &qjob{job: j.job}
				j.job.Outcome = session.Outcome{State: session.JobCancelled}
			}
			return q.view(j), nil
		}
	}
	return session.Job{}, fmt.Errorf("job %s: %w", id, session.ErrNotFound)
}

// Claim implements [session.Queue]. It takes the session's writer as
// [Store.Lease] does, so a session another process writes (vigil run)
// keeps its jobs waiting until it is released.
func (s *Store) Claim(ctx context.Context, worker string) (session.Claim, error) {
	q, err := s.queue()
	if err != nil {
		return nil, session.StoreError("jsonl", "claim", "", err)
	}
	var poll *time.Timer
	for {
		if err := ctx.Err(); err != nil {
			return nil, session.StoreError("jsonl", "claim", "", err)
		}
		wake := s.note.queueChanged()
		c, err := q.tryClaim(worker)
		if err != nil {
			return nil, session.StoreError("jsonl", "claim", "", err)
		}
		if c != nil {
			return c, nil
		}
		if poll == nil {
			poll = time.NewTimer(pollInterval)
			defer poll.Stop()
		} else {
			poll.Reset(pollInterval)
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-poll.C:
		}
	}
}

// candidates returns the first unfinished job of each session that no
// live store runs, oldest first. q.mu is held.
func (q *jqueue) candidates() []*qjob {
	var out []*qjob
	seen := map[string]bool{}
	for _, j := range q.jobs {
		if seen[j.job.Session] {
			continue
		}
		if q.running(j) {
			seen[j.job.Session] = true
			continue
		}
		if !j.cancelled {
			seen[j.job.Session] = true
		}
		out = append(out, j)
	}
	return out
}

// tryClaim claims a job if one can run now, or returns nil.
func (q *jqueue) tryClaim(worker string) (*claim, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, session.ErrClosed
	}
	// Look first without the file lock: most wake-ups find nothing.
	if err := q.catchUp(); err != nil {
		return nil, err
	}
	if len(q.candidates()) == 0 {
		return nil, nil
	}
	if err := q.ensureOwner(); err != nil {
		return nil, err
	}
	var c *claim
	err := q.locked(func() error {
		for _, j := range q.candidates() {
			if j.cancelled {
				// Cancelled while its worker ran, and that worker died.
				if err := q.write(op{Op: "drop", ID: j.job.ID, At: time.Now().UTC().Round(0)}); err != nil {
					return err
				}
				continue
			}
			sid := j.job.Session
			w, err := q.s.writer(sid)
			if err != nil {
				// Held by another (vigil run), or unreadable: the job
				// waits, and the session's next claim tries again.
				continue
			}
			if err := q.write(op{Op: "claim", ID: j.job.ID, Worker: worker, Owner: q.owner}); err != nil {
				q.s.releaseWriter(sid, w)
				return err
			}
			c = &claim{q: q, w: w, cancel: make(chan struct{})}
			q.claims[j.job.ID] = c
			c.job = q.view(j)
			q.startWatch()
			return nil
		}
		return nil
	})
	return c, err
}

// startWatch starts the goroutine that replays the journal while this
// store holds claims, so that a Cancel made by another store reaches
// them. q.mu is held.
func (q *jqueue) startWatch() {
	if q.watch {
		return
	}
	q.watch = true
	go func() {
		t := time.NewTicker(pollInterval)
		defer t.Stop()
		for {
			wake := q.s.note.queueChanged()
			q.mu.Lock()
			if q.closed || len(q.claims) == 0 {
				q.watch = false
				q.mu.Unlock()
				return
			}
			_ = q.catchUp() // a failure is seen by the next queue call
			q.mu.Unlock()
			select {
			case <-q.stop:
			case <-wake:
			case <-t.C:
			}
		}
	}()
}

// Cancel implements [session.Queue].
func (s *Store) Cancel(ctx context.Context, id string) (int, error) {
	if err := s.sessionExists(id); err != nil {
		return 0, session.StoreError("jsonl", "cancel", id, err)
	}
	q, err := s.queue()
	if err != nil {
		return 0, session.StoreError("jsonl", "cancel", id, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.catchUp(); err != nil {
		return 0, session.StoreError("jsonl", "cancel", id, err)
	}
	if !slices.ContainsFunc(q.jobs, func(j *qjob) bool { return j.job.Session == id }) {
		return 0, nil // nothing to write: no journal made for it
	}
	n := 0
	err = q.locked(func() error {
		var ops []op
		now := time.Now().UTC().Round(0)
		for _, j := range q.jobs {
			switch {
			case j.job.Session != id:
			case q.running(j):
				n++
				if !j.cancelled {
					ops = append(ops, op{Op: "cancel", ID: j.job.ID})
				}
			case j.cancelled: // dropped already, in effect
				ops = append(ops, op{Op: "drop", ID: j.job.ID, At: now})
			default:
				n++
				ops = append(ops, op{Op: "drop", ID: j.job.ID, At: now})
			}
		}
		return q.write(ops...)
	})
	if err != nil {
		return 0, session.StoreError("jsonl", "cancel", id, err)
	}
	return n, nil
}

// close ends the queue of a closing store: its claims end with it (their
// writers are closed by the store), its owner file goes, so the other
// stores may claim their jobs again.
func (q *jqueue) close(crash bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	close(q.stop)
	if q.olock != nil {
		if !crash {
			_ = os.Remove(q.olock.Path())
		}
		_ = q.olock.Close()
	}
	if q.lock != nil {
		_ = q.lock.Close()
	}
}

// claim is a job this store claimed, with its session's writer.
type claim struct {
	q      *jqueue
	w      *writer
	job    session.Job
	cancel chan struct{}
	once   sync.Once
}

func (c *claim) Job() session.Job {
	v := c.job
	v.Input = slices.Clone(v.Input)
	return v
}

func (c *claim) Cancelled() <-chan struct{} { return c.cancel }

// mine returns the claimed job while this claim holds it. q.mu is held.
func (c *claim) mine() (*qjob, error) {
	j := c.q.find(c.job.ID)
	if j == nil || c.q.claims[c.job.ID] != c || j.owner != c.q.owner {
		return nil, session.ErrJobDone
	}
	return j, nil
}

// Start implements [session.Claim].
func (c *claim) Start(ctx context.Context, base int64) error {
	q := c.q
	q.mu.Lock()
	defer q.mu.Unlock()
	err := q.locked(func() error {
		j, err := c.mine()
		if err != nil || j.job.Base >= 0 {
			return err
		}
		return q.write(op{Op: "start", ID: j.job.ID, Base: &base, At: time.Now().UTC().Round(0)})
	})
	if err != nil {
		return session.StoreError("jsonl", "start job "+c.job.ID, "", err)
	}
	return nil
}

// Finish implements [session.Claim].
func (c *claim) Finish(ctx context.Context, o session.Outcome) error {
	o, err := o.Normalize()
	if err == nil {
		err = c.end("finish", &o)
	}
	if err != nil {
		return session.StoreError("jsonl", "finish job "+c.job.ID, "", err)
	}
	return nil
}

// Release implements [session.Claim]. A job cancelled while it ran is
// dropped instead: the cancel was for it too.
func (c *claim) Release(ctx context.Context) error {
	if err := c.end("release", nil); err != nil {
		return session.StoreError("jsonl", "release job "+c.job.ID, "", err)
	}
	return nil
}

func (c *claim) end(kind string, o *session.Outcome) error {
	q := c.q
	q.mu.Lock()
	forgotten := false
	err := q.locked(func() error {
		j, err := c.mine()
		if err != nil {
			// The session was deleted under the claim: its job is gone,
			// and the claim ends here.
			if forgotten = q.claims[c.job.ID] == c; forgotten {
				delete(q.claims, c.job.ID)
			}
			return err
		}
		if kind == "release" && j.cancelled {
			kind = "drop"
		}
		// Ended even if the journal cannot say so: the job, claimed by
		// nobody alive once this store closes, is claimed again like a
		// crashed worker's.
		delete(q.claims, j.job.ID)
		return q.write(op{Op: kind, ID: j.job.ID, Outcome: o, At: time.Now().UTC().Round(0)})
	})
	q.mu.Unlock()
	if !forgotten && (errors.Is(err, session.ErrJobDone) || errors.Is(err, session.ErrClosed)) {
		return err
	}
	q.s.releaseWriter(c.job.Session, c.w)
	return err
}

var (
	_ session.Queue = (*Store)(nil)
	_ session.Claim = (*claim)(nil)
)
