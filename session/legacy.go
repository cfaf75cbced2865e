package session

import (
	"bytes"
	"unicode/utf8"
)

// Before records held valid UTF-8 only (see text.go), a record kept the
// bytes it was given, and its line spelled each invalid byte of a string
// as the escape \ufffd; a json.RawMessage (a tool's parameters, a
// plugin's data) was written as given, invalid bytes and all. The
// request digests of such a log were computed over those spellings, and
// the model was shown the bytes.
//
// Such a line is read as it was written, so that it re-encodes to itself
// and its digests re-derive: each \ufffd escape in a string of a core
// payload or in the type is one invalid byte (0xFF: which byte it was is
// not known, and any encodes as the escape), and JSON text is held as it
// is, escape and invalid bytes alike. A writer never makes that escape
// any more (it writes U+FFFD itself), so a line that holds it in a
// core string can only be one of these.

// legacyMarks are the characters decodeLegacy may stand in for the
// escape while the line is parsed: noncharacters, which text seldom
// holds; the first the line lacks is used (a line holding all of them is
// refused).
const legacyMarks = "\uFDD0\uFDD1\uFDD2\uFDD3\uFDD4\uFDD5\uFDD6\uFDD7\uFDD8\uFDD9\uFDDA\uFDDB\uFDDC\uFDDD\uFDDE\uFDDF" +
	"\uFDE0\uFDE1\uFDE2\uFDE3\uFDE4\uFDE5\uFDE6\uFDE7\uFDE8\uFDE9\uFDEA\uFDEB\uFDEC\uFDED\uFDEE\uFDEF"

// decodeLegacy decodes a record line in the spelling of a line written
// before the rule of text.go. ok is false when the line is not one such
// line that decodes to a record encoding to it again.
func decodeLegacy(line []byte) (_ Record, ok bool) {
	if !bytes.Contains(line, escapedFFFD) && utf8.Valid(line) {
		return Record{}, false
	}
	mark := ""
	for _, c := range legacyMarks {
		if m := string(c); !bytes.Contains(line, []byte(m)) {
			mark = m
			break
		}
	}
	if mark == "" {
		return Record{}, false
	}
	seq, t, ev, err := parseRecordLine(markEscapes(line, mark))
	if err != nil {
		return Record{}, false
	}
	rec := new(record)
	if rec.build(seq, t, &ev, nil, textRule{mark: mark}) != nil || !bytes.Equal(rec.line[:len(rec.line)-1], line) {
		return Record{}, false
	}
	return Record{rec}, true
}

// markEscapes returns line with each \ufffd escape replaced by mark. In
// JSON a backslash is always the start of an escape, inside a string, so
// the line is read escape by escape.
func markEscapes(line []byte, mark string) []byte {
	out := make([]byte, 0, len(line))
	start := 0
	for i := 0; i < len(line); {
		j := bytes.IndexByte(line[i:], '\\')
		if j < 0 {
			break
		}
		i += j
		if bytes.HasPrefix(line[i:], escapedFFFD) {
			out = append(append(out, line[start:i]...), mark...)
			i += len(escapedFFFD)
			start = i
			continue
		}
		i += 2 // the backslash and the escaped character
	}
	return append(out, line[start:]...)
}

// legacyText reports whether a record's line holds the escape \ufffd: the
// payload of a record read from a legacy line must be kept, since
// decoding the line again would read the escape as U+FFFD.
func legacyText(line []byte) bool { return bytes.Contains(line, escapedFFFD) }
