package session

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// The envelope and the core payloads are encoded by hand: appending is on
// the hot path of every model chunk, and the output must be byte for byte
// what encoding/json would produce for the same payload structs (a test
// holds the two equal), so either can read or recompute it.

const hexDigits = "0123456789abcdef"

// safeASCII marks the ASCII bytes encoding/json writes unescaped with its
// default HTML escaping: everything printable but '"', '\\', '<', '>', '&'.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = true
	}
	for _, b := range `"\<>&` {
		t[b] = false
	}
	return t
}()

// appendString appends s as a JSON string exactly as encoding/json.Marshal
// does: HTML characters and U+2028/U+2029 escaped, invalid UTF-8 replaced
// by U+FFFD, escaped. (A record holds invalid UTF-8 only when read from a
// line written before records held valid UTF-8 only: see legacy.go.)
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) && plainWord(s, i) {
			i += 8
		}
		if i == len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			if safeASCII[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plainWord reports whether the eight bytes of s from i are all written
// as they are (see safeASCII): it tests them at once, as one word, so
// that the long runs of plain text that most strings are cost a few
// instructions per eight bytes.
func plainWord(s string, i int) bool {
	w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// Each term has a high bit set where (and, for the borrows, only if
	// somewhere) a byte is not ASCII, is below 0x20, or is one of the
	// five characters escaped.
	bad := w&highs | (w-0x20*ones)&^w&highs |
		hasZeroByte(w^('"'*ones)) | hasZeroByte(w^('\\'*ones)) |
		hasZeroByte(w^('<'*ones)) | hasZeroByte(w^('>'*ones)) | hasZeroByte(w^('&'*ones))
	return bad == 0
}

// hasZeroByte is non-zero just when a byte of x is zero.
func hasZeroByte(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return (x - ones) &^ x & highs
}

// appendField appends `,"name":` (or `"name":` right after an opening
// brace) to dst.
func appendKey(dst []byte, key string) []byte {
	if dst[len(dst)-1] != '{' {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

func appendStringField(dst []byte, key, v string, omitEmpty bool) []byte {
	if omitEmpty && v == "" {
		return dst
	}
	return appendString(appendKey(dst, key), v)
}

func appendIntField(dst []byte, key string, v int64) []byte {
	return strconv.AppendInt(appendKey(dst, key), v, 10)
}

// timeLayout is the log's time format: RFC 3339, milliseconds, UTC.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// logTime is t as the log stores it: UTC, truncated to milliseconds.
func logTime(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// appendTime appends t (a log time) as a quoted timeLayout string. It is
// formatted by hand, and the date and clock of the latest second are
// cached: time.AppendFormat alone was a tenth of an append's cost.
func appendTime(dst []byte, t time.Time) []byte {
	sec := t.Unix()
	c := lastSecond.Load()
	if c == nil || c.sec != sec {
		year, _, _ := t.Date()
		if year < 0 || year > 9999 || t.Location() != time.UTC {
			dst = append(dst, '"')
			dst = t.AppendFormat(dst, timeLayout)
			return append(dst, '"')
		}
		c = &secondText{sec: sec}
		t.Truncate(time.Second).AppendFormat(c.text[:0], "2006-01-02T15:04:05")
		lastSecond.Store(c)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	var b [26]byte
	b[0] = '"'
	copy(b[1:20], c.text[:])
	b[20] = '.'
	b[21] = byte('0' + ms/100)
	b[22] = byte('0' + ms/10%10)
	b[23] = byte('0' + ms%10)
	b[24] = 'Z'
	b[25] = '"'
	return append(dst, b[:]...)
}

// secondText is the text of one second, "2006-01-02T15:04:05".
type secondText struct {
	sec  int64
	text [19]byte
}

var lastSecond atomic.Pointer[secondText]

func appendToolCall(dst []byte, c *ToolCall) []byte {
	dst = append(dst, '{')
	dst = appendStringField(dst, "id", c.ID, false)
	dst = appendStringField(dst, "name", c.Name, false)
	dst = appendStringField(dst, "arguments", c.Arguments, false)
	return append(dst, '}')
}

// appendPayload appends the canonical encoding of a core payload value and
// reports whether v was one it encodes by hand.
func appendPayload(dst []byte, v any) ([]byte, bool) {
	switch p := v.(type) {
	case TurnStart:
		dst = append(dst, '{')
		if p.Continues != 0 {
			dst = appendIntField(dst, "continues", int64(p.Continues))
		}
		dst = appendStringField(dst, "by", p.By, true)
		return append(dst, '}'), true
	case StepStart, EndSeed:
		return append(dst, '{', '}'), true
	case TurnEnd:
		dst = append(dst, '{')
		dst = appendStringField(dst, "reason", p.Reason, false)
		dst = appendStringField(dst, "error", p.Error, true)
		return append(dst, '}'), true
	case StepEnd:
		dst = append(dst, '{')
		dst = appendStringField(dst, "finish", p.Finish, true)
		if p.Usage != nil {
			dst = append(appendKey(dst, "usage"), '{')
			dst = appendIntField(dst, "input", int64(p.Usage.Input))
			dst = appendIntField(dst, "output", int64(p.Usage.Output))
			dst = append(dst, '}')
		}
		return append(dst, '}'), true
	case UserMessage:
		dst = append(dst, '{')
		dst = appendStringField(dst, "content", p.Content, false)
		dst = appendStringField(dst, "origin", p.Origin, true)
		return append(dst, '}'), true
	case Usage:
		dst = append(dst, '{')
		dst = appendIntField(dst, "input", int64(p.Input))
		dst = appendIntField(dst, "output", int64(p.Output))
		return append(dst, '}'), true
	case Digest:
		dst = append(dst, '{')
		dst = appendStringField(dst, "sha256", p.SHA256, false)
		dst = appendIntField(dst, "messages", int64(p.Messages))
		return append(dst, '}'), true
	case AssistantChunk:
		dst = append(dst, '{')
		dst = appendStringField(dst, "text", p.Text, true)
		dst = appendStringField(dst, "reasoning", p.Reasoning, true)
		if c := p.ToolCall; c != nil {
			dst = append(appendKey(dst, "tool_call"), '{')
			dst = appendIntField(dst, "index", int64(c.Index))
			dst = appendStringField(dst, "id", c.ID, true)
			dst = appendStringField(dst, "name", c.Name, true)
			dst = appendStringField(dst, "arguments", c.Arguments, true)
			dst = append(dst, '}')
		}
		return append(dst, '}'), true
	case AssistantMessage:
		dst = append(dst, '{')
		dst = appendStringField(dst, "content", p.Content, true)
		dst = appendStringField(dst, "reasoning", p.Reasoning, true)
		if len(p.ToolCalls) > 0 {
			dst = append(appendKey(dst, "tool_calls"), '[')
			for i := range p.ToolCalls {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendToolCall(dst, &p.ToolCalls[i])
			}
			dst = append(dst, ']')
		}
		return append(dst, '}'), true
	case ToolCall:
		return appendToolCall(dst, &p), true
	case ToolStart:
		dst = append(dst, '{')
		dst = appendStringField(dst, "id", p.ID, false)
		return append(dst, '}'), true
	case ToolResult:
		dst = append(dst, '{')
		dst = appendStringField(dst, "id", p.ID, false)
		dst = appendStringField(dst, "name", p.Name, true)
		dst = appendStringField(dst, "content", p.Content, true)
		if e := p.Error; e != nil {
			dst = append(appendKey(dst, "error"), '{')
			dst = appendStringField(dst, "code", e.Code, false)
			dst = appendStringField(dst, "message", e.Message, true)
			dst = append(dst, '}')
		}
		if c := p.Child; c != nil {
			dst = append(appendKey(dst, "child"), '{')
			dst = appendStringField(dst, "id", c.ID, false)
			dst = appendIntField(dst, "seq", c.Seq)
			dst = appendStringField(dst, "root", c.Root, true)
			dst = append(dst, '}')
		}
		return append(dst, '}'), true
	case Compaction:
		dst = append(dst, '{')
		dst = appendStringField(dst, "id", p.ID, false)
		return append(dst, '}'), true
	case ApprovalRequest:
		dst = append(dst, '{')
		dst = appendStringField(dst, "id", p.ID, false)
		dst = appendStringField(dst, "by", p.By, true)
		dst = appendStringField(dst, "reason", p.Reason, true)
		return append(dst, '}'), true
	case ApprovalDecision:
		dst = append(dst, '{')
		dst = appendStringField(dst, "id", p.ID, false)
		dst = append(appendKey(dst, "allow"), strconv.FormatBool(p.Allow)...)
		dst = appendStringField(dst, "by", p.By, true)
		dst = appendStringField(dst, "reason", p.Reason, true)
		dst = appendStringField(dst, "scope", p.Scope, true)
		if p.Cites != 0 {
			dst = appendIntField(dst, "cites", p.Cites)
		}
		return append(dst, '}'), true
	}
	return dst, false
}

// marshalPayload encodes a payload with encoding/json (for the payloads
// not encoded by hand: request headers and plugin-owned data).
func marshalPayload(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}
