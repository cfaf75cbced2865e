package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Log is a decoded session log.
type Log struct {
	Info    Info
	Records []Record
	// Size is the length in bytes of the valid part of the log: the header
	// and every record line. A writer continues the log at this offset.
	Size int64
	// Torn is the length of a torn last line that was dropped, 0 if none.
	Torn int

	// The decoder's validation of Records, which folded them: reused
	// once by NewLogStateOf, so a log is validated and folded once.
	decoded []Record
	v       *validator
}

// Decode reads a JSONL session log: a header line, then one record per
// line, each ending in a newline. Every line must be the canonical
// encoding of what it holds (see [DecodeHeader] and [DecodeRecord]), and
// every record is validated as an append would be (see [Validate]).
//
// A last line without its newline is a write cut short by a crash: Decode
// returns the log without it (with Torn set) together with a
// [*CorruptError] wrapping [ErrTornTail]; loaders check for that and carry
// on. Any other defect returns a nil Log and a *CorruptError naming the
// line, except a version other than [Version] ([ErrVersion]) and an
// unknown type not marked ignorable ([ErrUnknownType]), which are refused
// with their own errors.
func Decode(r io.Reader) (*Log, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("session: read log: %w", err)
	}
	return DecodeBytes(data)
}

// DecodeBytes is [Decode] of a log held in memory.
func DecodeBytes(data []byte) (*Log, error) { return decodeBytes(data, false, nil) }

// DecodeOwned is [DecodeBytes] of data the log takes over: each record's
// line is the slice of data that holds it, so that a loaded log holds its
// bytes once, and data must never be written afterwards (the result of
// os.ReadFile, say).
func DecodeOwned(data []byte) (*Log, error) { return decodeBytes(data, true, nil) }

// DecodeOwnedEach is [DecodeOwned] that hands each record to each as soon
// as it is decoded and validated, in order, before the next line is
// read. A reader of every record's payload (the invariants check of an
// opened log) reads them so in the decoder's pass, while the payload
// decoded to validate the record is at hand ([DecodeData] returns it
// without decoding), instead of decoding the log a second time. When
// the decode then fails, each has seen the records before the defect:
// the caller drops what it made of them.
func DecodeOwnedEach(data []byte, each func(Record)) (*Log, error) {
	return decodeBytes(data, true, each)
}

func decodeBytes(data []byte, own bool, each func(Record)) (*Log, error) {
	if len(data) == 0 {
		return nil, &CorruptError{Line: 1, Err: fmt.Errorf("%w: empty log", ErrMalformed)}
	}
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return nil, &CorruptError{Line: 1, Err: fmt.Errorf("%w: the header line", ErrTornTail)}
	}
	info, err := DecodeHeader(data[:nl])
	if err != nil {
		return nil, lineError(1, err)
	}
	log := &Log{Info: info, Size: int64(nl + 1), Records: make([]Record, 0, bytes.Count(data, []byte{'\n'}))}
	v := new(validator)
	*v = newValidator(cap(log.Records))
	var lines lineSlab // the lines' copies, when data is not the log's
	rest := data[nl+1:]
	for line := 2; len(rest) > 0; line++ {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			log.Torn = len(rest)
			log.decoded, log.v = log.Records, v
			return log, &CorruptError{Line: line, Err: fmt.Errorf("%w: %d bytes without a newline", ErrTornTail, len(rest))}
		}
		text := rest[: nl+1 : nl+1]
		if !own {
			text = lines.keep(text)
		}
		rec, err := decodeLine(text)
		if err == nil {
			err = v.add(rec)
		}
		if err != nil {
			return nil, lineError(line, err)
		}
		if each != nil {
			each(rec)
		}
		rec.lean()
		log.Records = append(log.Records, rec)
		log.Size += int64(nl + 1)
		rest = rest[nl+1:]
	}
	log.decoded, log.v = log.Records, v
	return log, nil
}

// lineError attaches a line number to a decoding error: a CorruptError,
// except for the refusals that are not defects.
func lineError(line int, err error) error {
	if errors.Is(err, ErrVersion) || errors.Is(err, ErrUnknownType) {
		return fmt.Errorf("session: line %d: %w", line, err)
	}
	return &CorruptError{Line: line, Err: err}
}

// DecodeHeader decodes a log's header line (without its newline). The
// line must be exactly what [AppendHeaderLine] writes for the header it
// holds: the keys type, version, id, created, tenant and by (only when not
// empty) and parent (only for a fork or child), spelled so, each once, in that order, created in the log's time format
// (RFC 3339 in UTC with milliseconds, 2006-01-02T15:04:05.000Z), and no
// white space. A version other than [Version] is [ErrVersion], whatever
// else the line holds.
func DecodeHeader(line []byte) (Info, error) {
	fields, err := objectFields(line)
	if err != nil {
		return Info{}, fmt.Errorf("%w: header: %w", ErrMalformed, err)
	}
	// The version first: another version may have another header.
	if f := lookup(fields, "version"); f != nil {
		var v int
		if err := json.Unmarshal(f, &v); err != nil {
			return Info{}, fmt.Errorf("%w: header: version: %w", ErrMalformed, err)
		}
		if v != Version {
			return Info{}, fmt.Errorf("%w: version %d, want %d", ErrVersion, v, Version)
		}
	}
	var (
		typ, id, created string
		tenant, by       string
		version          int
		parent           *Parent
		seen             = map[string]bool{}
	)
	for _, f := range fields {
		var err error
		switch f.key {
		case "type":
			err = json.Unmarshal(f.val, &typ)
		case "version":
			err = json.Unmarshal(f.val, &version)
		case "id":
			err = json.Unmarshal(f.val, &id)
		case "created":
			err = json.Unmarshal(f.val, &created)
		case "tenant":
			err = json.Unmarshal(f.val, &tenant)
		case "by":
			err = json.Unmarshal(f.val, &by)
		case "parent":
			parent = new(Parent)
			err = strictUnmarshal(f.val, parent)
		default:
			return Info{}, fmt.Errorf("%w: header: unknown field %q", ErrMalformed, f.key)
		}
		if err != nil {
			return Info{}, fmt.Errorf("%w: header: %s: %w", ErrMalformed, f.key, err)
		}
		seen[f.key] = true
	}
	for _, k := range [...]string{"type", "version", "id", "created"} {
		if !seen[k] {
			return Info{}, fmt.Errorf("%w: header without %s", ErrMalformed, k)
		}
	}
	if typ != "session" {
		return Info{}, fmt.Errorf("%w: header of type %q, want session", ErrMalformed, typ)
	}
	if !ValidID(id) {
		return Info{}, fmt.Errorf("%w: header: session id %q", ErrMalformed, id)
	}
	t, err := parseLogTime(created)
	if err != nil {
		return Info{}, fmt.Errorf("%w: header: created: %w", ErrMalformed, err)
	}
	if parent != nil && (!ValidID(parent.ID) || parent.Seq < -1) {
		return Info{}, fmt.Errorf("%w: header: parent %+v", ErrMalformed, *parent)
	}
	info := Info{ID: id, Version: version, Created: t, Tenant: tenant, By: by, Parent: parent}
	want := AppendHeaderLine(nil, info)
	if err := canonical(line, want[:len(want)-1]); err != nil {
		return Info{}, fmt.Errorf("%w: header: %w", ErrMalformed, err)
	}
	return info, nil
}

// DecodeRecord decodes one record line (without its newline) and checks
// the rules of the record alone (see [NewRecord]). The line must be the
// record's canonical encoding, exactly what this package writes for it:
// the envelope keys spelled and ordered as the package doc shows, each
// once, seq, type, time and data present, time in the log's format
// (2006-01-02T15:04:05.000Z), zero turn, step, sources and ignorable
// omitted, and a core payload encoded as [NewRecord] encodes it. So a log
// decodes only if re-encoding it gives the same bytes, and every reader
// sees the record its writer meant.
//
// A line that is not such an envelope is [ErrMalformed]; an envelope that
// breaks a rule of the record alone is a [*RecordError] naming the
// record.
func DecodeRecord(line []byte) (Record, error) {
	own := make([]byte, len(line)+1)
	copy(own, line)
	own[len(line)] = '\n'
	return decodeLine(own)
}

// decodeLine is DecodeRecord of line followed by its newline, which the
// record takes over as its line: line must never be written afterwards.
func decodeLine(line []byte) (Record, error) {
	text := line[:len(line)-1]
	// Lines this package wrote take the fast path, which reads the line
	// in place and keeps it if the record encodes to it; any other is
	// decoded field by field, which names what is wrong with it.
	if seq, t, ev, ok := scanEnvelope(text); ok {
		r := new(record)
		if r.build(seq, t, &ev, nil, textRule{line: line}) == nil {
			return Record{r}, nil
		}
	}
	rec, err := decodeRecordSlow(text)
	if err == nil {
		// The same bytes (checked), held once.
		rec.line = line
	}
	return rec, err
}

// decodeRecordSlow is DecodeRecord of a line that is not canonical or
// not a valid record: it finds out which, and says why.
func decodeRecordSlow(line []byte) (Record, error) {
	seq, t, ev, err := parseRecordLine(line)
	if err != nil {
		return Record{}, err
	}
	rec, err := newRecord(seq, t, &ev)
	if err != nil {
		return Record{}, &RecordError{Seq: seq, Type: ev.Type, Turn: ev.Turn, Step: ev.Step, Err: err}
	}
	if err := canonical(line, rec.line[:len(rec.line)-1]); err != nil {
		if old, ok := decodeLegacy(line); ok {
			return old, nil
		}
		return Record{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return rec, nil
}

// parseRecordLine reads the envelope of a record line field by field,
// leaving the data as it is written.
func parseRecordLine(line []byte) (seq int64, t time.Time, ev Event, err error) {
	fields, err := objectFields(line)
	if err != nil {
		return 0, t, ev, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	var (
		tm      string
		surface Surface
		data    json.RawMessage
		seen    = map[string]bool{}
	)
	for _, f := range fields {
		var err error
		switch f.key {
		case "seq":
			err = json.Unmarshal(f.val, &seq)
		case "type":
			err = json.Unmarshal(f.val, &ev.Type)
		case "time":
			err = json.Unmarshal(f.val, &tm)
		case "turn":
			err = json.Unmarshal(f.val, &ev.Turn)
		case "step":
			err = json.Unmarshal(f.val, &ev.Step)
		case "surface":
			if err = strictUnmarshal(f.val, &surface); err == nil {
				ev.Surface = &surface
			}
		case "sources":
			err = json.Unmarshal(f.val, &ev.Sources)
		case "ignorable":
			err = json.Unmarshal(f.val, &ev.Ignorable)
		case "data":
			data = f.val
		default:
			return 0, t, ev, fmt.Errorf("%w: unknown field %q", ErrMalformed, f.key)
		}
		if err != nil {
			return 0, t, ev, fmt.Errorf("%w: %s: %w", ErrMalformed, f.key, err)
		}
		seen[f.key] = true
	}
	for _, k := range [...]string{"seq", "type", "time", "data"} {
		if !seen[k] {
			return 0, t, ev, fmt.Errorf("%w: record without %s", ErrMalformed, k)
		}
	}
	if t, err = parseLogTime(tm); err != nil {
		return 0, t, ev, fmt.Errorf("%w: time: %w", ErrMalformed, err)
	}
	ev.Data = data
	return seq, t, ev, nil
}

// scanEnvelope reads a record line laid out as appendEnvelope writes it,
// without a JSON decoder: the fields in their order, integers, a type
// without escapes, a 24-byte time, up to "data": and a closing brace at
// the end; ev.Data is left nil. ok is false for any other line (which
// may still be canonical, or not a record at all: the slow path decides).
// The caller checks that the record re-encodes to the line.
func scanEnvelope(line []byte) (seq int64, t time.Time, ev Event, ok bool) {
	p := envelope(line)
	if !p.lit(`{"seq":`) {
		return
	}
	if seq, ok = p.num(); !ok || !p.lit(`,"type":"`) {
		return 0, t, ev, false
	}
	if ev.Type, ok = p.typ(); !ok {
		return 0, t, ev, false
	}
	if t, ok = p.time(); !ok {
		return 0, t, ev, false
	}
	if !p.optional(&ev) || !p.lit(`,"data":`) || len(p) < 2 || p[len(p)-1] != '}' {
		return 0, t, ev, false
	}
	// The data is left where it stands: the record reads it there (see
	// textRule.line).
	return seq, t, ev, true
}

// envelope is what is left to read of a line scanEnvelope reads. Each
// method reads one part from its start and reports whether it was there.
type envelope []byte

// lit reads s.
func (p *envelope) lit(s string) bool {
	if len(*p) >= len(s) && string((*p)[:len(s)]) == s {
		*p = (*p)[len(s):]
		return true
	}
	return false
}

// num reads a decimal integer.
func (p *envelope) num() (int64, bool) {
	n, rest, ok := decimal(*p)
	*p = rest
	return n, ok
}

// decimal reads the decimal integer b starts with (a minus or not, then
// digits), as strconv.ParseInt reads it, and returns the rest of b.
func decimal(b []byte) (int64, []byte, bool) {
	i := 0
	if len(b) > 0 && b[0] == '-' {
		i++
	}
	start := i
	var n int64
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	switch digits := i - start; {
	case digits == 0:
		return 0, b, false
	case digits > 18:
		// It may not fit: strconv says.
		v, err := strconv.ParseInt(string(b[:i]), 10, 64)
		return v, b[i:], err == nil
	}
	if start > 0 {
		n = -n
	}
	return n, b[i:], true
}

// small reads a decimal integer that fits an int.
func (p *envelope) small() (int, bool) {
	n, ok := p.num()
	return int(n), ok && n == int64(int(n))
}

// typ reads a type without escapes, up to its closing quote.
func (p *envelope) typ() (string, bool) {
	i := bytes.IndexByte(*p, '"')
	if i < 0 || bytes.IndexByte((*p)[:i], '\\') >= 0 {
		return "", false
	}
	typ := internType((*p)[:i])
	*p = (*p)[i:]
	return typ, true
}

// time reads the time field after the type's closing quote.
func (p *envelope) time() (time.Time, bool) {
	if !p.lit(`","time":"`) || len(*p) < 25 || (*p)[24] != '"' {
		return time.Time{}, false
	}
	t, ok := parseTimeText((*p)[:24])
	if ok {
		*p = (*p)[25:]
	}
	return t, ok
}

// parseTimeText is parseLogTime of the 24 bytes of a time in the log's
// format (2006-01-02T15:04:05.000Z), read by hand: time.Parse was most of
// the cost of reading an envelope. Like time.Parse, it refuses a field
// out of its range (a 13th month, a 31st of April, a 60th second).
func parseTimeText(b []byte) (time.Time, bool) {
	if len(b) != 24 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != '.' || b[23] != 'Z' {
		return time.Time{}, false
	}
	ok := true
	digits := func(i, j int) int {
		n := 0
		for _, c := range b[i:j] {
			ok = ok && '0' <= c && c <= '9'
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := digits(0, 4), digits(5, 7), digits(8, 10)
	hour, minute, sec, ms := digits(11, 13), digits(14, 16), digits(17, 19), digits(20, 23)
	if !ok || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	secs := daysSinceEpoch(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	return time.UnixMilli(secs*1000 + int64(ms)).UTC(), true
}

// daysSinceEpoch returns the days from 1970-01-01 to a date of the
// proleptic Gregorian calendar with a year from 0 to 9999 (the civil
// days algorithm of H. Hinnant, which time.Date also computes, slower).
func daysSinceEpoch(year, month, day int) int64 {
	y := int64(year)
	if month <= 2 {
		y--
	}
	era := (y + 400) / 400 // y ≥ -1: the era counted from -400
	yoe := y + 400 - era*400
	m := int64(month+9) % 12 // March is 0
	doy := (153*m+2)/5 + int64(day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return (era-1)*146097 + doe - 719468
}

// daysIn returns the number of days of month in year.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// optional reads the fields a record may leave out, those before its
// data, into ev.
func (p *envelope) optional(ev *Event) bool {
	ok := true
	if p.lit(`,"turn":`) {
		ev.Turn, ok = p.small()
	}
	if ok && p.lit(`,"step":`) {
		ev.Step, ok = p.small()
	}
	if ok && p.lit(`,"surface":{"op":"replace","start":`) {
		ev.Surface, ok = p.surface()
	}
	if ok && p.lit(`,"sources":[`) {
		ev.Sources, ok = p.sources()
	}
	if ok && p.lit(`,"ignorable":true`) {
		ev.Ignorable = true
	}
	return ok
}

// surface reads the rest of a replace surface after its start's key.
func (p *envelope) surface() (*Surface, bool) {
	sf := &Surface{Op: OpReplace}
	var ok bool
	sf.Start, ok = p.num()
	if ok = ok && p.lit(`,"end":`); ok {
		sf.End, ok = p.num()
		ok = ok && p.lit(`}`)
	}
	return sf, ok
}

// sources reads the rest of a list of sources after its [.
func (p *envelope) sources() ([]int64, bool) {
	var out []int64
	for {
		s, ok := p.num()
		if !ok {
			return out, false
		}
		out = append(out, s)
		if p.lit(`]`) {
			return out, true
		}
		if !p.lit(`,`) {
			return out, false
		}
	}
}

// parseLogTime parses a time written in the log's format, and only that:
// RFC 3339 in UTC with exactly three fraction digits.
func parseLogTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err == nil && (len(s) != len("2006-01-02T15:04:05.000Z") || t.Location() != time.UTC || t.Format(timeLayout) != s) {
		err = errors.New("not in the log's form")
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time in UTC with milliseconds (like 2026-11-29T20:21:24.000Z): %w", s, err)
	}
	return t, nil
}

// canonical checks that a line is the canonical encoding want of what it
// decoded to, and names the first difference.
func canonical(line, want []byte) error {
	if bytes.Equal(line, want) {
		return nil
	}
	i := 0
	for i < len(line) && i < len(want) && line[i] == want[i] {
		i++
	}
	return fmt.Errorf("not in the canonical encoding: at byte %d, %s where the encoder writes %s", i, excerpt(line[i:]), excerpt(want[i:]))
}

// excerpt quotes the start of b, bounded.
func excerpt(b []byte) string {
	if len(b) == 0 {
		return "the end of the line"
	}
	const n = 24
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "…"
	}
	return strconv.Quote(string(b))
}

// field is one member of a JSON object.
type field struct {
	key string
	val json.RawMessage
}

// objectFields splits a line holding one JSON object into its members, in
// order, refusing a repeated key and anything after the object. Keys are
// compared as written: encoding/json would match "tYpe" to type.
func objectFields(line []byte) ([]field, error) {
	if len(line) == 0 || line[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string) // an object's keys are strings
		for _, f := range out {
			if f.key == key {
				return nil, fmt.Errorf("repeated field %q", key)
			}
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		out = append(out, field{key, val})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the object")
	}
	return out, nil
}

func lookup(fields []field, key string) json.RawMessage {
	for _, f := range fields {
		if f.key == key {
			return f.val
		}
	}
	return nil
}

// strictUnmarshal decodes one JSON object, refusing unknown fields and
// trailing data.
func strictUnmarshal(line []byte, v any) error {
	if len(line) == 0 || line[0] != '{' {
		return errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the object")
	}
	return nil
}

// internType returns the type name b spells: the core type's own string
// when it is one (no allocation: a long log holds its type names once),
// else a new string.
func internType(b []byte) string {
	if k, ok := coreNames[string(b)]; ok {
		return k
	}
	return string(b)
}

// coreNames maps each core type name to itself.
var coreNames = func() map[string]string {
	m := make(map[string]string, len(coreKinds))
	for name := range coreKinds {
		m[name] = name
	}
	return m
}()
