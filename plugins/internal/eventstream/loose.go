package eventstream

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// String is a string field of an event, read as the official SDKs read
// it (through gjson): a number, a boolean, an object or an array in its
// place is taken as its text, null as empty. A server that sends
// arguments as an object rather than a string is understood, as it was
// when the SDKs read the stream.
type String string

// UnmarshalJSON implements json.Unmarshaler.
func (s *String) UnmarshalJSON(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case 'n':
		*s = ""
	case '"':
		*s = String(unquote(b))
	case 't':
		*s = "true"
	case 'f':
		*s = "false"
	case '{', '[':
		*s = String(b)
	default:
		*s = String(numberText(string(b)))
	}
	return nil
}

// unquote is the text of a JSON string as gjson reads it: its bytes as
// sent, escapes resolved, bytes that are not UTF-8 kept (encoding/json
// would replace them). b is a valid JSON string.
func unquote(b []byte) string {
	in := b[1 : len(b)-1]
	if !bytes.ContainsRune(in, '\\') {
		return string(in)
	}
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		if in[i] != '\\' {
			out = append(out, in[i])
			continue
		}
		i++
		switch c := in[i]; c {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hexRune(in[i+1 : i+5])
			i += 4
			// A surrogate takes the escape after it, paired or not.
			if utf16.IsSurrogate(r) && i+6 < len(in) && in[i+1] == '\\' && in[i+2] == 'u' {
				r = utf16.DecodeRune(r, hexRune(in[i+3:i+7]))
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, c)
		}
	}
	return string(out)
}

// hexRune is the rune four hex digits spell.
func hexRune(h []byte) rune {
	v, _ := strconv.ParseUint(string(h), 16, 32)
	return rune(v)
}

// numberText spells a JSON number as gjson does: an integer as sent,
// anything else as the shortest decimal of its float64 value.
func numberText(raw string) string {
	i := 0
	if raw != "" && raw[0] == '-' {
		i++
	}
	for ; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			f, _ := strconv.ParseFloat(raw, 64)
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	return raw
}

// Int is an integer field of an event, read as the official SDKs read it:
// a string that spells a number, a boolean or a fraction in its place is
// taken as the integer it means. Set says the field was there and a
// number (null, an object or an array is no number).
type Int struct {
	Value int64
	Set   bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *Int) UnmarshalJSON(b []byte) error {
	*n = Int{}
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case 'n', '{', '[':
	case 't':
		*n = Int{Value: 1, Set: true}
	case 'f':
		*n = Int{Set: true}
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		_, err := strconv.ParseFloat(s, 64)
		*n = Int{Value: stringInt(s), Set: err == nil}
	default:
		*n = Int{Value: numberInt(string(b)), Set: true}
	}
	return nil
}

// stringInt is gjson's Int of a string.
func stringInt(s string) int64 {
	if v, ok := parseInt(s); ok {
		return v
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return floatInt(f)
	}
	return 0
}

// numberInt is gjson's Int of a number.
func numberInt(raw string) int64 {
	f, _ := strconv.ParseFloat(raw, 64)
	if f >= -9007199254740991 && f <= 9007199254740991 {
		return int64(f)
	}
	if v, ok := parseInt(raw); ok {
		return v
	}
	return floatInt(f)
}

// parseInt is gjson's parseInt: an optionally signed run of digits,
// clamped to int64, whose unsigned value wraps or saturates as gjson's
// does (it only notices an overflow that makes the value smaller).
func parseInt(s string) (int64, bool) {
	neg := s != "" && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var u uint64
	overflow := false
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		if next := u*10 + uint64(s[i]-'0'); next < u {
			overflow = true
		} else if !overflow {
			u = next
		}
	}
	if overflow {
		u = math.MaxUint64
	}
	switch {
	case neg && u > 1<<63:
		return math.MinInt64, true
	case neg:
		return -int64(u), true
	case u > math.MaxInt64:
		return math.MaxInt64, true
	}
	return int64(u), true
}

// floatInt is gjson's conversion of a float to an integer, saturating.
func floatInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f < math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// Object is an object field of an event, read as the official SDKs read
// it: anything but an object in its place (a string, an array, null) is
// as if the field were absent.
type Object[T any] struct {
	V   T
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (o *Object[T]) UnmarshalJSON(b []byte) error {
	*o = Object[T]{}
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	o.Set = true
	return json.Unmarshal(b, &o.V)
}

// List is an array field of objects, read as the official SDKs read it:
// anything but an array of objects (nulls allowed, as zero elements) in
// its place is an empty list.
type List[T any] []T

// UnmarshalJSON implements json.Unmarshaler.
func (l *List[T]) UnmarshalJSON(b []byte) error {
	*l = nil
	var elems []json.RawMessage
	if len(b) == 0 || b[0] != '[' || json.Unmarshal(b, &elems) != nil {
		return nil
	}
	out := make(List[T], len(elems))
	for i, e := range elems {
		switch e[0] {
		case 'n':
		case '{':
			if err := json.Unmarshal(e, &out[i]); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	*l = out
	return nil
}
