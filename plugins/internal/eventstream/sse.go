package eventstream

import (
	"bufio"
	"bytes"
	"io"
)

// maxLine bounds one line of an event stream, as both official SDKs
// bound it (64 KiB << 9, 32 MiB): a longer line ends the stream with
// bufio.ErrTooLong.
const maxLine = bufio.MaxScanTokenSize << 9

// Event is one server-sent event: its event field (empty when the server
// sent none) and its data lines, each followed by a newline.
type Event struct {
	Type string
	Data []byte
}

// Reader reads server-sent events from a response body the way the
// official OpenAI and Anthropic SDKs do: lines end with LF or CRLF; an
// empty line dispatches the event so far, unless it has neither a type
// nor data; "event:" sets the type, "data:" adds a line to the data (one
// space after the colon is dropped), a line that starts with a colon is
// a comment, and other fields are ignored. An event that the body ends
// in the middle of is dropped.
type Reader struct {
	body io.ReadCloser
	scn  *bufio.Scanner
	evt  Event
	err  error
}

// NewReader reads events from body, which [Reader.Close] closes.
func NewReader(body io.ReadCloser) *Reader {
	scn := bufio.NewScanner(body)
	scn.Buffer(nil, maxLine)
	return &Reader{body: body, scn: scn}
}

// Next reads the next event; false at the end of the body or on an error
// (see [Reader.Err]).
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	var typ string
	var data []byte
	for r.scn.Scan() {
		line := r.scn.Bytes()
		if len(line) == 0 {
			if typ == "" && len(data) == 0 {
				continue
			}
			r.evt = Event{Type: typ, Data: data}
			return true
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "event":
			typ = string(value)
		case "data":
			data = append(data, value...)
			data = append(data, '\n')
		}
	}
	r.err = r.scn.Err()
	return false
}

// Event returns the event Next read.
func (r *Reader) Event() Event { return r.evt }

// Err returns the error that ended reading, nil at the end of the body.
func (r *Reader) Err() error { return r.err }

// Close closes the body.
func (r *Reader) Close() error { return r.body.Close() }
