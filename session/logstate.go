package session

import (
	"fmt"
	"slices"
	"time"
)

// LogState is one valid log in memory: its records, the next seq, the memoized
// fold of its surface and its latest request header. It is what a live
// session holds (see package session/live), without the bus, the store or
// any locking: a LogState is not safe for concurrent use, and the slices it
// returns are shared, read-only views.
//
// Records join a LogState in two steps, so that a caller can veto or store a
// record between building it and committing it: [LogState.Stage] builds and
// checks the next record without changing the log, [LogState.Commit] adds it.
type LogState struct {
	records   []Record
	v         validator
	header    Header
	hasHeader bool
	lines     lineSlab // where staged records' lines are kept
}

// NewLogState returns the log of records, which must form a valid log from seq
// 0 (see [Validate]). The log takes records over: the caller must not
// write the slice afterwards.
func NewLogState(records []Record) (*LogState, error) {
	l := &LogState{records: records, v: newValidator(len(records))}
	for _, r := range records {
		if err := l.v.add(r); err != nil {
			return nil, err
		}
	}
	l.header, l.hasHeader = DeriveHeader(records)
	return l, nil
}

// NewLogStateOf is [NewLogState] of a copy of log.Records (the log's list
// stays the caller's). For a log [Decode] made, whose records are still
// the ones it decoded, it takes over the validation and fold the decoder
// made of them instead of doing them again: once only, the next call
// validates afresh.
func NewLogStateOf(log *Log) (*LogState, error) {
	records := slices.Clone(log.Records)
	if v := log.v; v != nil && v.next == int64(len(records)) && slices.Equal(records, log.decoded) {
		log.v, log.decoded = nil, nil
		l := &LogState{records: records, v: *v}
		// The decoder sized the surface for any log; keep what it holds.
		l.v.fold.surface = slices.Clip(append(make([]Record, 0, len(v.fold.surface)+8), v.fold.surface...))
		l.header, l.hasHeader = DeriveHeader(records)
		return l, nil
	}
	return NewLogState(records)
}

// Extend commits records made elsewhere (repair's closers), checked as
// the log's next.
func (l *LogState) Extend(records ...Record) error {
	for _, r := range records {
		if err := l.v.add(r); err != nil {
			return err
		}
		l.records = append(l.records, r)
		if p, ok := r.pay().(RequestHeader); ok {
			l.header, l.hasHeader = normalizeHeader(p.Header), true
		}
	}
	return nil
}

// Staged is a record built and checked by [LogState.Stage], not yet committed.
type Staged struct {
	rec    Record
	ps, pe int // the surface positions a replace covers
}

// Record returns the staged record.
func (s Staged) Record() Record { return s.rec }

// Stage builds the record of ev as the log's next, at log time t (see
// [LogTime]), and checks that it satisfies the rules of [NewRecord] and
// fits the log (a replace must fit the surface). The log is unchanged
// until [LogState.Commit].
func (l *LogState) Stage(t time.Time, ev *Event) (Staged, error) {
	rec := new(record)
	if err := rec.build(l.v.next, t, ev, &l.lines, textRule{}); err != nil {
		return Staged{}, err
	}
	ps, pe, err := l.v.check(Record{rec})
	if err != nil {
		return Staged{}, err
	}
	return Staged{rec: Record{rec}, ps: ps, pe: pe}, nil
}

// Commit adds the staged record. It must be the latest staged one of this
// log, with no commit between: a stale one is refused with ErrDuplicateSeq.
func (l *LogState) Commit(s Staged) error {
	if s.rec.IsZero() || s.rec.seq != l.v.next {
		return fmt.Errorf("%w: a stale staged record", ErrDuplicateSeq)
	}
	if len(l.records) == cap(l.records) {
		// Doubling, as the fold's surface grows: append's 1.25 for large
		// slices would copy each record's pointer five times over.
		l.records = slices.Grow(l.records, len(l.records)+8)
	}
	l.records = append(l.records, s.rec)
	l.v.apply(s.rec, s.ps, s.pe)
	if p, ok := s.rec.pay().(RequestHeader); ok {
		l.header, l.hasHeader = normalizeHeader(p.Header), true
	}
	return nil
}

// Len returns the number of records, which is the next seq.
func (l *LogState) Len() int { return len(l.records) }

// Records returns the records, shared: a view that later commits do not
// change (its capacity is its length), to be treated as read-only.
func (l *LogState) Records() []Record { return l.records[:len(l.records):len(l.records)] }

// Messages returns the fold, equal to DeriveMessages(l.Records()): the
// projection of the memoized surface, a new list, the caller's. (The
// messages are not kept: a long log would hold them beside its records.)
func (l *LogState) Messages() []Message { return l.v.fold.surfaceMessages() }

// Header returns the latest logged request header, normalized (see
// [DeriveHeader]), shared, and whether there is one.
func (l *LogState) Header() (Header, bool) { return l.header, l.hasHeader }

// OpenTurn returns the turn records leave open, 0 when none is.
func OpenTurn(records []Record) int { return scanTurns(records).turn }

// LogTime is t as the log stores times: UTC, truncated to the millisecond.
func LogTime(t time.Time) time.Time { return logTime(t) }

// RepairRecords returns the records of [Closers] for records, stamped t,
// with the seqs that follow records.
func RepairRecords(records []Record, t time.Time) ([]Record, error) {
	return repairRecords(records, logTime(t))
}
