package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Log is a decoded session log.
type Log struct {
	Info    Info
	Records []*Record
	// Size is the length in bytes of the valid part of the log: the header
	// and every record line. A writer continues the log at this offset.
	Size int64
	// Torn is the length of a torn last line that was dropped, 0 if none.
	Torn int
}

// Decode reads a JSONL session log: a header line, then one record per
// line, each ending in a newline. Every record is validated as
// [Session.Append] would (see [Validate]).
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
func DecodeBytes(data []byte) (*Log, error) {
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
	log := &Log{Info: info, Size: int64(nl + 1), Records: make([]*Record, 0, bytes.Count(data, []byte{'\n'}))}
	var v validator
	rest := data[nl+1:]
	for line := 2; len(rest) > 0; line++ {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			log.Torn = len(rest)
			return log, &CorruptError{Line: line, Err: fmt.Errorf("%w: %d bytes without a newline", ErrTornTail, len(rest))}
		}
		rec, err := DecodeRecord(rest[:nl])
		if err == nil {
			err = v.add(rec)
		}
		if err != nil {
			return nil, lineError(line, err)
		}
		log.Records = append(log.Records, rec)
		log.Size += int64(nl + 1)
		rest = rest[nl+1:]
	}
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

type wireHeader struct {
	Type    string  `json:"type"`
	Version *int    `json:"version"`
	ID      string  `json:"id"`
	Created string  `json:"created"`
	Parent  *Parent `json:"parent"`
}

// DecodeHeader decodes a log's header line (without its newline).
func DecodeHeader(line []byte) (Info, error) {
	var h wireHeader
	if err := strictUnmarshal(line, &h); err != nil {
		return Info{}, fmt.Errorf("%w: header: %w", ErrMalformed, err)
	}
	if h.Type != "session" || h.Version == nil {
		return Info{}, fmt.Errorf("%w: header without type session and a version", ErrMalformed)
	}
	if *h.Version != Version {
		return Info{}, fmt.Errorf("%w: version %d, want %d", ErrVersion, *h.Version, Version)
	}
	if !ValidID(h.ID) {
		return Info{}, fmt.Errorf("%w: header: session id %q", ErrMalformed, h.ID)
	}
	created, err := time.Parse(time.RFC3339Nano, h.Created)
	if err != nil {
		return Info{}, fmt.Errorf("%w: header: created: %w", ErrMalformed, err)
	}
	if h.Parent != nil && (!ValidID(h.Parent.ID) || h.Parent.Seq < -1) {
		return Info{}, fmt.Errorf("%w: header: parent %+v", ErrMalformed, *h.Parent)
	}
	return Info{ID: h.ID, Version: *h.Version, Created: logTime(created), Parent: h.Parent}, nil
}

type wireRecord struct {
	Seq       *int64          `json:"seq"`
	Type      string          `json:"type"`
	Time      string          `json:"time"`
	Turn      int             `json:"turn"`
	Step      int             `json:"step"`
	Surface   *Surface        `json:"surface"`
	Sources   []int64         `json:"sources"`
	Ignorable bool            `json:"ignorable"`
	Data      json.RawMessage `json:"data"`
}

// DecodeRecord decodes one record line (without its newline) and checks
// the rules of the record alone (see [NewRecord]). The record's bytes are
// its canonical re-encoding, which equals the line for lines this package
// wrote.
func DecodeRecord(line []byte) (*Record, error) {
	var w wireRecord
	if err := strictUnmarshal(line, &w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if w.Seq == nil || w.Time == "" {
		return nil, fmt.Errorf("%w: record without seq or time", ErrMalformed)
	}
	t, err := time.Parse(time.RFC3339Nano, w.Time)
	if err != nil {
		return nil, fmt.Errorf("%w: time: %w", ErrMalformed, err)
	}
	ev := Event{Type: w.Type, Turn: w.Turn, Step: w.Step, Surface: w.Surface, Sources: w.Sources, Ignorable: w.Ignorable}
	if w.Data != nil {
		ev.Data = w.Data
	}
	return newRecord(*w.Seq, logTime(t), &ev)
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
