package session

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"unicode/utf8"
)

// A record holds valid UTF-8 only: every string of its payload, its type
// and its data's JSON text. A record is made from what its writer gives
// (a prompt, a tool's output, a file name), which may be any bytes; each
// invalid byte becomes U+FFFD, as encoding/json does when it encodes a
// string. It is done once, where the record is made (Record.build): so
// the record, its stored line, the fold a digest covers and the request a
// provider receives hold the same characters, and the line decodes to the
// record again. A line written before the rule may spell an invalid byte
// as the escape \ufffd; see legacy.go for how it is read.

// escapedFFFD is how the encoder writes an invalid byte of a string.
var escapedFFFD = []byte(`\ufffd`)

// validString returns s with each invalid byte replaced by U+FFFD: s
// itself, without allocating, when it is valid.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(appendValid(make([]byte, 0, len(s)+8), s))
}

// validBytes is validString of JSON text: b itself when it is valid, else
// a new slice. (In JSON text an invalid byte can only be inside a string,
// so the text stays JSON.)
func validBytes(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return appendValid(make([]byte, 0, len(b)+8), string(b))
}

// appendValid appends s to dst, each invalid byte as U+FFFD.
func appendValid(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			start = i + 1
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// textRule is how a record's text is made. The zero rule is the one for
// every record made now: valid UTF-8. A legacy rule (mark set) reads a
// line written before it, whose \ufffd escapes the decoder spelled as mark
// (see decodeLegacy).
type textRule struct {
	mark string
	// line, when set, is the line (with its newline) the record must
	// make, read from a log: the record is refused unless it makes
	// exactly these bytes, and holds them as its line, so they must
	// never be written afterwards. Its payload is read in place (see
	// scan_payload.go).
	line []byte
}

// str returns the string a record holds for s.
func (t textRule) str(s string) string {
	if t.mark == "" {
		return validString(s)
	}
	// The escape stood for an invalid byte: hold one, so that the
	// record encodes, and digests, as it did when it was written.
	return strings.ReplaceAll(s, t.mark, "\xff")
}

// raw returns the JSON text a record holds for b (a json.RawMessage of a
// core payload, or a plugin's data).
func (t textRule) raw(b []byte) []byte {
	if t.mark == "" {
		return validBytes(b)
	}
	if !bytes.Contains(b, []byte(t.mark)) {
		return b
	}
	return bytes.ReplaceAll(b, []byte(t.mark), escapedFFFD)
}

// payload returns the core payload p as a record holds it (a copy when
// that differs) and whether it differs. data is p's encoding, which says
// cheaply whether p can differ: the encoder writes an invalid byte of a
// string as \ufffd and copies a json.RawMessage as it is.
func (t textRule) payload(p any, data []byte) (any, bool) {
	if t.mark == "" && utf8.Valid(data) && !bytes.Contains(data, escapedFFFD) {
		return p, false
	}
	return rewriteText(p, t.str, t.raw)
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// rewriteText returns a copy of the payload value p with every string
// passed through str and every json.RawMessage through raw, and whether
// any changed; p itself when none did. What p refers to is not written.
// It walks the payload's fields by reflection, so a field added to a core
// payload is covered without a change here.
func rewriteText(p any, str func(string) string, raw func([]byte) []byte) (any, bool) {
	if p == nil {
		return p, false
	}
	v := reflect.New(reflect.TypeOf(p)).Elem()
	v.Set(reflect.ValueOf(p))
	if !rewriteValue(v, str, raw) {
		return p, false
	}
	return v.Interface(), true
}

// rewriteValue rewrites the settable value v in place, copying what it
// refers to before writing it, and reports whether anything changed.
func rewriteValue(v reflect.Value, str func(string) string, raw func([]byte) []byte) bool {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if t := str(s); t != s {
			v.SetString(t)
			return true
		}
	case reflect.Struct:
		changed := false
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() && rewriteValue(f, str, raw) {
				changed = true
			}
		}
		return changed
	case reflect.Pointer:
		if v.IsNil() {
			return false
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(v.Elem())
		if rewriteValue(c.Elem(), str, raw) {
			v.Set(c)
			return true
		}
	case reflect.Slice:
		if v.IsNil() {
			return false
		}
		if v.Type() == rawMessageType {
			b := v.Bytes()
			if t := raw(b); !bytes.Equal(t, b) {
				v.SetBytes(t)
				return true
			}
			return false
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		changed := false
		for i := range c.Len() {
			if rewriteValue(c.Index(i), str, raw) {
				changed = true
			}
		}
		if changed {
			v.Set(c)
		}
		return changed
	}
	return false
}

// ValidString returns s as a record holds it: each invalid UTF-8 byte
// replaced by U+FFFD (s itself, without allocating, when it is valid).
// What a writer keeps beside the records it makes (a message assembled
// from streamed chunks, say) is made so too, so that it equals them.
func ValidString(s string) string { return validString(s) }

// ValidText returns v with its text as a record holds it: every string
// in it (through structs, pointers and slices) with each invalid UTF-8
// byte replaced by U+FFFD, and every json.RawMessage likewise. What v
// refers to is not written; v itself is returned when it is valid. It
// compares what a writer was given with what was logged: a request
// re-derived from a log written before records held valid UTF-8 only
// (see docs/log-format.md) is sent again as ValidText of it.
func ValidText[T any](v T) T {
	out, changed := rewriteText(v, validString, validBytes)
	if !changed {
		return v
	}
	return out.(T)
}

// eachRaw reports whether fn holds for every json.RawMessage in v
// (through structs, pointers and slices). It allocates nothing.
func eachRaw(v reflect.Value, fn func([]byte) bool) bool {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if !eachRaw(v.Field(i), fn) {
				return false
			}
		}
	case reflect.Pointer, reflect.Interface:
		return v.IsNil() || eachRaw(v.Elem(), fn)
	case reflect.Slice:
		if v.Type() == rawMessageType {
			return fn(v.Bytes())
		}
		if v.Type().Elem().Kind() == reflect.String {
			return true
		}
		for i := range v.Len() {
			if !eachRaw(v.Index(i), fn) {
				return false
			}
		}
	}
	return true
}

// marshalsAsIs reports whether encoding/json writes the JSON text b as it
// is: compact, with no '<', '>', '&', U+2028 or U+2029 to escape (and
// not empty but for nil, which is left out as the decoder leaves it).
func marshalsAsIs(b []byte) bool {
	if len(b) == 0 {
		return b == nil
	}
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9):
			return false
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}
