package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync"
	"time"
)

// Record is one committed event of a log. It is immutable by
// construction: a Record is a value holding the only reference to data
// no exported name can reach, so whoever is handed one — a listener, a
// store, a reader — can read it and pass it on but has no way to write
// through it (assigning to a Record replaces only the holder's copy). Its
// canonical line is encoded once when the record is made, its payload is
// decoded once, and every accessor returns a copy or a value, so a Record
// may be shared freely between goroutines, sessions and stores.
//
// Records are passed by value, as time.Time or netip.Addr are. The zero
// Record is no record (see [Record.IsZero]); its other methods panic.
// Two Records are == when they are the same record.
type Record struct{ *record }

// IsZero reports whether r is the zero Record, which holds no record.
func (r Record) IsZero() bool { return r.record == nil }

// record is a Record's data, written only while the record is made.
type record struct {
	seq     int64
	ms      int64 // the time: Unix milliseconds, UTC
	typ     string
	turn    int
	step    int
	line    []byte // canonical line including the trailing newline
	payload any    // decoded core payload (a value, never a pointer); nil otherwise (see pay)
	// The surface range of a replace and the sources are read from the
	// line when asked (span, sourceList): most records have neither, and a
	// long log in memory should not be its bytes twice over.
	dataOff   int32 // data is line[dataOff : len(line)-2]
	op        uint8 // surface op: opNone, opAppend or opReplace
	ignorable bool
	sourced   bool // the line has sources
	// visible says whether the record projects to a message at all (see
	// project, which makes the message from the payload when asked: a
	// record does not carry its message, which would double its size).
	visible bool
}

const (
	opNone uint8 = iota
	opAppend
	opReplace
)

// Seq returns the event's index in its log.
func (r Record) Seq() int64 { return r.seq }

// Type returns the event type.
func (r Record) Type() string { return r.typ }

// Time returns when the event was appended, UTC, to the millisecond.
func (r Record) Time() time.Time { return time.UnixMilli(r.ms).UTC() }

// Turn returns the event's turn number, 0 when it has none.
func (r Record) Turn() int { return r.turn }

// Step returns the event's step number, 0 when it has none.
func (r Record) Step() int { return r.step }

// IsSurface reports whether the record is a surface event.
func (r Record) IsSurface() bool { return r.op != opNone }

// Surface returns how the record changes the surface: Op "append" or
// "replace" for surface events, the zero Surface for others.
func (r Record) Surface() Surface {
	switch r.op {
	case opAppend:
		return Surface{Op: OpAppend}
	case opReplace:
		start, end := r.span()
		return Surface{Op: OpReplace, Start: start, End: end}
	}
	return Surface{}
}

// Sources returns a copy of the seqs the event derives from.
func (r Record) Sources() []int64 { return r.sourceList() }

var (
	replaceKey = []byte(`,"surface":{"op":"replace","start":`)
	endKey     = []byte(`,"end":`)
	sourcesKey = []byte(`,"sources":[`)
)

// span returns the range of a replace, read from the line's envelope
// (which appendEnvelope wrote: the keys cannot occur in the escaped type
// before them).
func (r *record) span() (start, end int64) {
	if r.op != opReplace {
		return 0, 0
	}
	env := r.line[:r.dataOff]
	rest := env[bytes.Index(env, replaceKey)+len(replaceKey):]
	start, rest = leadingInt(rest)
	end, _ = leadingInt(rest[len(endKey):])
	return start, end
}

// sourceList returns the sources, read from the line's envelope: a new
// list, nil when there are none.
func (r *record) sourceList() []int64 {
	if !r.sourced {
		return nil
	}
	env := r.line[:r.dataOff]
	rest := env[bytes.Index(env, sourcesKey)+len(sourcesKey):]
	out := make([]int64, 0, bytes.Count(rest[:bytes.IndexByte(rest, ']')], []byte{','})+1)
	for {
		var n int64
		n, rest = leadingInt(rest)
		out = append(out, n)
		if rest[0] == ']' {
			return out
		}
		rest = rest[1:]
	}
}

// leadingInt parses the decimal digits b starts with (a non-negative
// int64, as the encoder wrote it) and returns the rest.
func leadingInt(b []byte) (int64, []byte) {
	var n int64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	return n, b[i:]
}

// Ignorable reports whether readers without the owning plugin may skip
// the event.
func (r Record) Ignorable() bool { return r.ignorable }

// Data returns a copy of the event's payload as JSON.
func (r Record) Data() json.RawMessage { return bytes.Clone(r.data()) }

func (r *record) data() []byte { return r.line[r.dataOff : len(r.line)-2] }

// Bytes returns a copy of the record's canonical line, without the
// trailing newline.
func (r Record) Bytes() []byte { return bytes.Clone(r.line[:len(r.line)-1]) }

// AppendLine appends the canonical line and a newline to dst. Stores use
// it to write records without an intermediate copy.
func (r Record) AppendLine(dst []byte) []byte { return append(dst, r.line...) }

// LineLen returns the length of the canonical line including its newline.
func (r Record) LineLen() int { return len(r.line) }

func (r Record) String() string { return string(r.line[:len(r.line)-1]) }

// DecodeData decodes the record's payload into a T. For the payload
// structs of this package it returns a copy of the payload decoded when
// the record was made, without parsing JSON again.
func DecodeData[T any](r Record) (T, error) {
	if r.payload != nil {
		if p, ok := r.payload.(T); ok {
			if pa, isAny := any(&p).(*any); isAny {
				// T is any: p is the cached payload itself, boxed.
				*pa = clonePayload(*pa)
			} else {
				cloneRefs(&p)
			}
			return p, nil
		}
	} else if p, ok := r.pay().(T); ok {
		return p, nil // decoded for this call
	}
	var v T
	if err := json.Unmarshal(r.data(), &v); err != nil {
		return v, fmt.Errorf("session: seq %d: decode %s data: %w", r.seq, r.typ, err)
	}
	return v, nil
}

// pay returns the record's core payload: the one decoded when it was
// made, or, for a loaded record that does not keep it (see lean), decoded
// again from its line, which was checked to decode when it was loaded.
// Nil for plugin types.
func (r *record) pay() any {
	if r.payload != nil {
		return r.payload
	}
	k := coreKinds[r.typ]
	if k == nil {
		return nil
	}
	p, err := decodeCore(k, r.data(), true)
	if err != nil {
		return nil
	}
	return p
}

// lean drops the decoded payload of a loaded record that readers of a
// log seldom ask for (chunks, calls, step and turn bounds…), so that a
// long log in memory is not its bytes twice over; pay decodes it again
// when asked. Surface records, headers and approvals keep theirs: folds,
// requests and approval rules read them. So does a record read from a
// legacy line (see legacy.go), which its line alone does not give again.
func (r *record) lean() {
	switch r.typ {
	case TypeUserMessage, TypeAssistantMessage, TypeToolResult, TypeToolReconcile, TypeRequestHeader,
		TypeApprovalRequest, TypeApprovalDecision, TypeApprovalPolicy:
		return
	}
	if p := r.payload; p != nil && reflect.TypeOf(p).Size() > 0 && !legacyText(r.line) {
		r.payload = nil
	}
}

// linePool holds the scratch buffers records are encoded in.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// lineSlab hands out the lines of a log's records from shared blocks: a
// line of its own would be an allocation per record, each rounded up to
// its size class. A record's line is the slice of a block its bytes were
// copied to, capped at its length, so nothing appended to one can reach
// the next; the rest of a block is written only by later keeps, never
// where a line was handed out. A block lives as long as any of its lines.
type lineSlab struct {
	free  []byte // the unused end of the current block
	block int    // the current block's size, 0 before the first
}

const (
	minLineBlock = 512
	maxLineBlock = 8 << 10
)

// keep returns a copy of line for a record to keep. A nil slab (records
// made alone, by NewRecord) gives each line its own allocation, and so
// does a line longer than a quarter of the largest block.
func (s *lineSlab) keep(line []byte) []byte {
	if s == nil || len(line) > maxLineBlock/4 {
		return bytes.Clone(line)
	}
	if cap(s.free) < len(line) {
		// Blocks start small, for the many short logs, and double up to
		// maxLineBlock as the log grows. The end of the last one, too
		// short for this line, is left unused.
		s.block = min(max(2*s.block, minLineBlock), maxLineBlock)
		s.free = make([]byte, 0, max(s.block, len(line)))
	}
	out := append(s.free, line...)
	s.free = out[len(out):]
	return out[:len(out):len(out)]
}

// NewRecord makes the record of ev at seq and time t, checking every rule
// that concerns the event alone: a known type,
// turn and step where the type requires them, a surface field only on
// surface events, sources before seq, a payload of the type's shape. Rules
// that concern the log (seq order, replace endpoints) are checked when the
// record joins one. Stores and tests use it; sessions make their own.
func NewRecord(seq int64, t time.Time, ev Event) (Record, error) {
	return newRecord(seq, logTime(t), &ev)
}

// newRecord builds the record. t must already be a log time.
func newRecord(seq int64, t time.Time, ev *Event) (Record, error) {
	r := new(record)
	if err := r.build(seq, t, ev, nil, textRule{}); err != nil {
		return Record{}, err
	}
	return Record{r}, nil
}

// build makes r the record of ev (r is zero and not yet shared). Its line
// is cut from lines (see keepLine) when that is not nil. Its text follows
// rule: the zero rule, valid UTF-8 (see text.go), for every record made
// now.
func (r *record) build(seq int64, t time.Time, ev *Event, lines *lineSlab, rule textRule) error {
	if seq < 0 {
		return fmt.Errorf("%w: negative seq %d", ErrDuplicateSeq, seq)
	}
	*r = record{seq: seq, typ: rule.str(ev.Type), ms: t.UnixMilli(), turn: ev.Turn, step: ev.Step, ignorable: ev.Ignorable, sourced: len(ev.Sources) > 0}
	k, err := r.checkEnvelope(ev.Surface, ev.Sources)
	if err != nil {
		return err
	}

	// The line is encoded in a scratch buffer and kept at its exact
	// size (see keepLine): a log holds many, and growing each in place
	// would leave most of them with up to twice the room they need.
	scratch := linePool.Get().(*[]byte)
	defer func() {
		if cap(*scratch) <= 64<<10 {
			linePool.Put(scratch)
		}
	}()
	line, err := r.appendEnvelope((*scratch)[:0], t, ev.Surface, ev.Sources)
	if err != nil {
		return err
	}
	defer func() { *scratch = line }()
	if rule.line != nil {
		// A line read from a log: it must start with the envelope the
		// record makes, and its data is read where it stands.
		env := len(line)
		if len(rule.line) < env+2 || !bytes.Equal(rule.line[:env], line) {
			return errNotCanonical
		}
		line, err = r.appendRaw(line, k, rule.line[env:len(rule.line)-2], rule)
	} else {
		line, err = r.appendData(line, k, ev.Data, rule)
	}
	if err != nil {
		return err
	}
	if k == nil {
		// A plugin's data is JSON text, held as it is written.
		if data := line[r.dataOff:]; len(data) > 0 {
			if text := rule.raw(data); !bytes.Equal(text, data) {
				line = append(line[:r.dataOff], text...)
			}
		}
	}
	line = append(line, '}', '\n')
	if rule.line != nil {
		if !bytes.Equal(line, rule.line) {
			return errNotCanonical
		}
		r.line = rule.line
	} else {
		r.line = lines.keep(line)
	}
	if r.op != opNone {
		_, r.visible = project(r)
	}
	return nil
}

// appendData appends the data of an event, whichever form the caller gave
// it in (see [Event]).
func (r *record) appendData(line []byte, k *kind, data any, rule textRule) ([]byte, error) {
	if data == nil && k != nil {
		// No data is the zero payload, encoded as any other payload
		// value: the decoder reads only what the encoder writes for it.
		data = reflect.Zero(k.payload).Interface()
	}
	switch d := data.(type) {
	case nil:
		return append(line, '{', '}'), nil
	case json.RawMessage:
		return r.appendRaw(line, k, d, rule)
	case []byte:
		return r.appendRaw(line, k, d, rule)
	}
	if k == nil {
		out, err := marshalPayload(line, data)
		if err != nil {
			return nil, fmt.Errorf("%w: seq %d %s: %w", ErrInvalidPayload, r.seq, r.typ, err)
		}
		return out, nil
	}
	p, ok := payloadValue(k, data)
	if !ok {
		return nil, fmt.Errorf("%w: seq %d: %s data is %T, want %v", ErrInvalidPayload, r.seq, r.typ, data, k.payload)
	}
	return r.appendCore(line, p, nil, rule)
}

// appendRaw appends caller-encoded data after checking it: plugin data
// compacted, core data decoded and encoded again, so that the record's
// bytes are what its payload holds (the canonical form [DecodeRecord]
// insists on), whoever encoded the data.
func (r *record) appendRaw(line []byte, k *kind, d []byte, rule textRule) ([]byte, error) {
	if k == nil {
		var b bytes.Buffer
		if err := json.Compact(&b, d); err != nil {
			return nil, fmt.Errorf("%w: seq %d %s: %w", ErrInvalidPayload, r.seq, r.typ, err)
		}
		return append(line, b.Bytes()...), nil
	}
	d = bytes.TrimSpace(d)
	p, err := decodeCore(k, d, rule.line != nil)
	if err != nil {
		return nil, fmt.Errorf("%w: seq %d %s: %w", ErrInvalidPayload, r.seq, r.typ, err)
	}
	return r.appendCore(line, p, d, rule)
}

// appendCore appends the canonical encoding of the core payload p as the
// record holds it (its text made by rule), checks it and keeps it as the
// record's payload. from is the JSON p was decoded from, nil for a value.
func (r *record) appendCore(line []byte, p any, from []byte, rule textRule) ([]byte, error) {
	out, byHand, err := appendCoreData(line, p)
	// A payload encoded by hand holds strings only, which the encoder
	// writes as valid UTF-8 whatever they hold, and which are read from
	// valid UTF-8 (an invalid byte is read as U+FFFD): one read from a
	// line it must encode to holds valid text already, or cannot encode
	// to it.
	if err == nil && !(byHand && rule.line != nil) {
		if held, changed := rule.payload(p, out[r.dataOff:]); changed {
			p = held
			out, byHand, err = appendCoreData(out[:r.dataOff], p)
		}
	}
	if err == nil && !byHand && rule.mark == "" && !bytes.Equal(out[r.dataOff:], from) && !eachRaw(reflect.ValueOf(p), marshalsAsIs) {
		// encoding/json writes a json.RawMessage compacted, with HTML
		// characters escaped: the record holds it as its line does
		// (which p, decoded from those very bytes, already does).
		p, err = coreKinds[r.typ].decodeOwn(out[r.dataOff:])
	}
	if err != nil {
		return nil, fmt.Errorf("%w: seq %d %s: %w", ErrInvalidPayload, r.seq, r.typ, err)
	}
	if err := checkPayload(r.seq, r.typ, p); err != nil {
		return nil, err
	}
	r.payload = p
	return out, nil
}

// appendCoreData appends the canonical encoding of a core payload, and
// says whether it was encoded by hand (see appendPayload).
func appendCoreData(line []byte, p any) ([]byte, bool, error) {
	if out, ok := appendPayload(line, p); ok {
		return out, true, nil
	}
	out, err := marshalPayload(line, p)
	return out, false, err
}

// decodeCore decodes the data of a core type, which must be an object;
// own says data is part of a record's own line, canonical or compared
// with its canonical encoding (see kind.decodeOwn), and never written:
// it is read in place when it is in the canonical form (see
// scanPayload).
func decodeCore(k *kind, data []byte, own bool) (any, error) {
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("data is not a JSON object")
	}
	if !own {
		return k.decode(data)
	}
	if p, ok := scanPayload(k, data); ok {
		return p, nil
	}
	return k.decodeOwn(data)
}

// errNotCanonical refuses a line that is not the encoding of the record
// read from it (see textRule.line); DecodeRecord then finds out why.
var errNotCanonical = errors.New("not in the canonical encoding")

// checkPayload checks the fields a core payload cannot do without.
func checkPayload(seq int64, typ string, p any) error {
	bad := false
	switch v := p.(type) {
	case ToolCall:
		bad = v.ID == "" || v.Name == ""
	case ToolResult:
		bad = v.ID == ""
	case ToolStart:
		bad = v.ID == ""
	case ToolRetry:
		bad = v.ID == ""
	case ToolReconcile:
		bad = v.ID == ""
	case AssistantMessage:
		for _, c := range v.ToolCalls {
			bad = bad || c.ID == "" || c.Name == ""
		}
	case ApprovalRequest, ApprovalDecision, ApprovalPolicy:
		return checkApproval(seq, typ, p)
	}
	if bad {
		return fmt.Errorf("%w: seq %d: %s", ErrNoCallID, seq, typ)
	}
	return nil
}

// checkEnvelope checks the rules that concern the envelope alone and
// sets the surface fields. It returns the core kind, nil for plugin types.
func (r *record) checkEnvelope(sf *Surface, sources []int64) (*kind, error) {
	if r.typ == "" {
		return nil, fmt.Errorf("%w: seq %d: empty type", ErrInvalidEvent, r.seq)
	}
	k := coreKinds[r.typ]
	if k == nil {
		if !r.ignorable && !known(r.typ) {
			return nil, fmt.Errorf("%w: seq %d: %q (not ignorable)", ErrUnknownType, r.seq, r.typ)
		}
	} else if r.ignorable {
		return nil, fmt.Errorf("%w: seq %d: core type %s marked ignorable", ErrInvalidEvent, r.seq, r.typ)
	}
	if err := r.checkScope(k); err != nil {
		return nil, err
	}
	for _, s := range sources {
		if s < 0 || s >= r.seq {
			return nil, fmt.Errorf("%w: seq %d: source %d is not an earlier seq", ErrInvalidEvent, r.seq, s)
		}
	}
	if k == nil || !k.surface {
		if sf != nil {
			return nil, fmt.Errorf("%w: seq %d: surface op on %s, which is not a surface event", ErrInvalidReplace, r.seq, r.typ)
		}
		return k, nil
	}
	r.op = opAppend
	if sf == nil {
		return k, nil
	}
	switch sf.Op {
	case "", OpAppend:
		if sf.Start != 0 || sf.End != 0 {
			return nil, fmt.Errorf("%w: seq %d: append with a range", ErrInvalidReplace, r.seq)
		}
	case OpReplace:
		if sf.Start < 0 || sf.End < 0 || sf.Start >= r.seq || sf.End >= r.seq {
			return nil, fmt.Errorf("%w: seq %d: range %d..%d is not before the event", ErrInvalidReplace, r.seq, sf.Start, sf.End)
		}
		r.op = opReplace
	default:
		return nil, fmt.Errorf("%w: seq %d: unknown surface op %q", ErrInvalidReplace, r.seq, sf.Op)
	}
	return k, nil
}

func (r *record) checkScope(k *kind) error {
	if r.turn < 0 || r.step < 0 {
		return fmt.Errorf("%w: seq %d: negative turn or step", ErrInvalidEvent, r.seq)
	}
	if r.step > 0 && r.turn == 0 {
		return fmt.Errorf("%w: seq %d: step %d without a turn", ErrInvalidScope, r.seq, r.step)
	}
	sc := scopeAny
	if k != nil {
		sc = k.scope
	}
	var bad string
	switch sc {
	case scopeNone:
		if r.turn != 0 {
			bad = "must not have a turn"
		}
	case scopeOptTurn:
		if r.step != 0 {
			bad = "must not have a step"
		}
	case scopeTurnOnly:
		if r.turn == 0 {
			bad = "needs a turn"
		} else if r.step != 0 {
			bad = "must not have a step"
		}
	case scopeTurn:
		if r.turn == 0 {
			bad = "needs a turn"
		}
	case scopeStep:
		if r.turn == 0 || r.step == 0 {
			bad = "needs a turn and a step"
		}
	}
	if bad != "" {
		return fmt.Errorf("%w: seq %d: %s %s", ErrInvalidScope, r.seq, r.typ, bad)
	}
	return nil
}

// appendEnvelope appends every field before the data and `"data":`.
// Fields come in a fixed order: seq, type, time, turn, step, surface,
// sources, ignorable, data; zero turn, step, sources and ignorable are
// omitted, and so is the surface of an append.
func (r *record) appendEnvelope(dst []byte, t time.Time, sf *Surface, sources []int64) ([]byte, error) {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, r.seq, 10)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, r.typ)
	dst = append(dst, `,"time":`...)
	dst = appendTime(dst, t)
	if r.turn != 0 {
		dst = appendIntField(dst, "turn", int64(r.turn))
	}
	if r.step != 0 {
		dst = appendIntField(dst, "step", int64(r.step))
	}
	if r.op == opReplace {
		dst = append(dst, replaceKey...)
		dst = strconv.AppendInt(dst, sf.Start, 10)
		dst = append(dst, endKey...)
		dst = strconv.AppendInt(dst, sf.End, 10)
		dst = append(dst, '}')
	}
	if len(sources) > 0 {
		dst = append(dst, sourcesKey...)
		for i, s := range sources {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, s, 10)
		}
		dst = append(dst, ']')
	}
	if r.ignorable {
		dst = append(dst, `,"ignorable":true`...)
	}
	dst = append(dst, `,"data":`...)
	if len(dst) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: seq %d: the envelope is %d bytes long", ErrInvalidEvent, r.seq, len(dst))
	}
	r.dataOff = int32(len(dst))
	return dst, nil
}
