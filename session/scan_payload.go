package session

import (
	"bytes"
	"unicode/utf8"
	"unsafe"
)

// A record read from a log is kept only if the line it makes is byte for
// byte the line it was read from (see DecodeRecord), so the payload of
// such a line needs reading only in the form appendPayload writes. The
// scanners here read that form and nothing else, without encoding/json's
// reflection: fields in the encoder's order, strings as appendString
// writes them, integers in decimal. What they cannot read (another form,
// or an escape the encoder never writes) they leave to encoding/json,
// and what they misread cannot pass the comparison: the encoding of the
// value they read is what it is compared with. A fuzz target holds them
// equal to the strict decoder.
//
// A string without escapes is not copied: it points into the record's
// line, which is immutable and outlives the payload read from it (the
// caller passes only a record's own line; see readOwnLine).

// payloadScan is what is left to read of a payload, and whether all read
// so far was in the canonical form: once not, every method does nothing
// and the scan is given up.
type payloadScan struct {
	b  []byte
	ok bool
}

// scanPayload reads data, the payload of kind k in a record's own line,
// in its canonical form. ok is false when it cannot: the caller decodes
// it with encoding/json. (The scanners are called directly, not from a
// table, so that the scan is not allocated.)
func scanPayload(k *kind, data []byte) (_ any, ok bool) {
	s := payloadScan{b: data, ok: len(data) > 0 && data[0] == '{'}
	s.b = s.b[min(1, len(s.b)):]
	var v any
	switch k.name {
	case TypeTurnStart:
		v = scanTurnStart(&s)
	case TypeTurnEnd:
		v = scanTurnEnd(&s)
	case TypeStepStart:
		v = StepStart{}
	case TypeEndSeed:
		v = EndSeed{}
	case TypeStepEnd:
		v = scanStepEnd(&s)
	case TypeUserMessage:
		v = scanUserMessage(&s)
	case TypeRequestDigest:
		v = scanDigest(&s)
	case TypeRequestUsage, TypeStepUsage:
		v = s.usage()
	case TypeAssistantChunk:
		v = scanAssistantChunk(&s)
	case TypeAssistantMessage:
		v = scanAssistantMessage(&s)
	case TypeToolCall:
		v = s.toolCall()
	case TypeToolStart:
		v = ToolStart{ID: s.idOnly()}
	case TypeToolResult:
		v = scanToolResult(&s)
	case TypeCompactionStart, TypeCompactionEnd:
		v = Compaction{ID: s.idOnly()}
	case TypeApprovalRequest:
		v = scanApprovalRequest(&s)
	case TypeApprovalDecision:
		v = scanApprovalDecision(&s)
	default:
		return nil, false // encoded by encoding/json
	}
	if !s.ok || len(s.b) != 1 || s.b[0] != '}' {
		return nil, false
	}
	return v, true
}

// lit reads l.
func (s *payloadScan) lit(l string) {
	if s.ok && len(s.b) >= len(l) && string(s.b[:len(l)]) == l {
		s.b = s.b[len(l):]
		return
	}
	s.ok = false
}

// key reads the key k (quoted, with its colon) of an optional field and
// reports whether the field is there. The comma before it is read when
// there is one: a stray or missing comma is the comparison's to refuse.
func (s *payloadScan) key(k string) bool {
	if !s.ok {
		return false
	}
	b := s.b
	if len(b) > 0 && b[0] == ',' {
		b = b[1:]
	}
	if len(b) >= len(k) && string(b[:len(k)]) == k {
		s.b = b[len(k):]
		return true
	}
	return false
}

// need reads the key of a field the encoder always writes.
func (s *payloadScan) need(k string) {
	if !s.key(k) {
		s.ok = false
	}
}

// str reads a string.
func (s *payloadScan) str() string {
	if !s.ok || len(s.b) == 0 || s.b[0] != '"' {
		s.ok = false
		return ""
	}
	b := s.b[1:]
	end := bytes.IndexByte(b, '"')
	if end < 0 {
		s.ok = false
		return ""
	}
	if bytes.IndexByte(b[:end], '\\') >= 0 {
		return s.escaped(b)
	}
	s.b = b[end+1:]
	if end == 0 {
		return ""
	}
	return unsafe.String(&b[0], end)
}

// escaped reads the rest of a string that holds escapes, after its
// opening quote, into a string of its own.
func (s *payloadScan) escaped(b []byte) string {
	// The string ends at the first quote no backslash escapes; what it
	// holds is at most as long as what spells it.
	end := 0
	for end < len(b) && b[end] != '"' {
		if b[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(b) {
		s.ok = false
		return ""
	}
	out := make([]byte, 0, end)
	for i := 0; i <= end; {
		switch c := b[i]; c {
		case '"':
			s.b = b[i+1:]
			return unsafe.String(unsafe.SliceData(out), len(out))
		case '\\':
			r, n := unescape(b[i:])
			if n == 0 {
				s.ok = false
				return ""
			}
			out = utf8.AppendRune(out, r)
			i += n
		default:
			out = append(out, c)
			i++
		}
	}
	s.ok = false
	return ""
}

// unescape reads the escape b starts with, as appendString writes them:
// the character and the escape's length, 0 for any other escape (a
// surrogate, say, which the encoder never writes).
func unescape(b []byte) (rune, int) {
	if len(b) < 2 {
		return 0, 0
	}
	switch b[1] {
	case '"', '\\':
		return rune(b[1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		if len(b) < 6 {
			return 0, 0
		}
		var r rune
		for _, c := range b[2:6] {
			switch {
			case '0' <= c && c <= '9':
				r = r<<4 | rune(c-'0')
			case 'a' <= c && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			default:
				return 0, 0
			}
		}
		if utf8.ValidRune(r) {
			return r, 6
		}
	}
	return 0, 0
}

// int reads a decimal integer.
func (s *payloadScan) int() int64 {
	if !s.ok {
		return 0
	}
	n, rest, ok := decimal(s.b)
	s.b, s.ok = rest, ok
	return n
}

// at reads c and reports whether it was next.
func (s *payloadScan) at(c byte) bool {
	if s.ok && len(s.b) > 0 && s.b[0] == c {
		s.b = s.b[1:]
		return true
	}
	return false
}

// bool reads true or false.
func (s *payloadScan) bool() bool {
	if s.ok && len(s.b) >= 4 && string(s.b[:4]) == "true" {
		s.b = s.b[4:]
		return true
	}
	s.lit("false")
	return false
}

// strField reads the optional string field k.
func (s *payloadScan) strField(k string) string {
	if s.key(k) {
		return s.str()
	}
	return ""
}

// idOnly reads the fields of a payload that is {"id":…}.
func (s *payloadScan) idOnly() string {
	s.need(`"id":`)
	return s.str()
}

func scanTurnStart(s *payloadScan) TurnStart {
	var v TurnStart
	if s.key(`"continues":`) {
		v.Continues = int(s.int())
	}
	v.By = s.strField(`"by":`)
	return v
}

func scanTurnEnd(s *payloadScan) TurnEnd {
	var v TurnEnd
	s.need(`"reason":`)
	v.Reason = s.str()
	v.Error = s.strField(`"error":`)
	return v
}

func scanStepEnd(s *payloadScan) StepEnd {
	var v StepEnd
	v.Finish = s.strField(`"finish":`)
	if s.key(`"usage":`) {
		s.lit("{")
		u := s.usage()
		s.lit("}")
		v.Usage = &u
	}
	return v
}

// usage reads the fields of a Usage.
func (s *payloadScan) usage() Usage {
	var u Usage
	s.need(`"input":`)
	u.Input = int(s.int())
	s.need(`"output":`)
	u.Output = int(s.int())
	return u
}

func scanUserMessage(s *payloadScan) UserMessage {
	var v UserMessage
	s.need(`"content":`)
	v.Content = s.str()
	v.Origin = s.strField(`"origin":`)
	return v
}

func scanDigest(s *payloadScan) Digest {
	var v Digest
	s.need(`"sha256":`)
	v.SHA256 = s.str()
	s.need(`"messages":`)
	v.Messages = int(s.int())
	return v
}

func scanAssistantChunk(s *payloadScan) AssistantChunk {
	var v AssistantChunk
	v.Text = s.strField(`"text":`)
	v.Reasoning = s.strField(`"reasoning":`)
	if s.key(`"tool_call":`) {
		s.lit("{")
		c := new(ChunkToolCall)
		s.need(`"index":`)
		c.Index = int(s.int())
		c.ID = s.strField(`"id":`)
		c.Name = s.strField(`"name":`)
		c.Arguments = s.strField(`"arguments":`)
		s.lit("}")
		v.ToolCall = c
	}
	return v
}

// toolCall reads the fields of a ToolCall.
func (s *payloadScan) toolCall() ToolCall {
	var c ToolCall
	s.need(`"id":`)
	c.ID = s.str()
	s.need(`"name":`)
	c.Name = s.str()
	s.need(`"arguments":`)
	c.Arguments = s.str()
	return c
}

func scanAssistantMessage(s *payloadScan) AssistantMessage {
	var v AssistantMessage
	v.Content = s.strField(`"content":`)
	v.Reasoning = s.strField(`"reasoning":`)
	if s.key(`"tool_calls":`) {
		s.lit("[")
		for s.ok {
			s.lit("{")
			v.ToolCalls = append(v.ToolCalls, s.toolCall())
			s.lit("}")
			if s.at(']') {
				break
			}
			s.lit(",")
		}
	}
	return v
}

func scanToolResult(s *payloadScan) ToolResult {
	var v ToolResult
	s.need(`"id":`)
	v.ID = s.str()
	v.Name = s.strField(`"name":`)
	v.Content = s.strField(`"content":`)
	if s.key(`"error":{`) {
		e := new(ToolResultError)
		s.need(`"code":`)
		e.Code = s.str()
		e.Message = s.strField(`"message":`)
		s.lit("}")
		v.Error = e
	}
	if s.key(`"child":{`) {
		c := new(ChildRef)
		c.ID = s.idOnly()
		s.need(`"seq":`)
		c.Seq = s.int()
		c.Root = s.strField(`"root":`)
		s.lit("}")
		v.Child = c
	}
	return v
}

func scanApprovalRequest(s *payloadScan) ApprovalRequest {
	var v ApprovalRequest
	v.ID = s.idOnly()
	v.By = s.strField(`"by":`)
	v.Reason = s.strField(`"reason":`)
	return v
}

func scanApprovalDecision(s *payloadScan) ApprovalDecision {
	var v ApprovalDecision
	v.ID = s.idOnly()
	s.need(`"allow":`)
	v.Allow = s.bool()
	v.By = s.strField(`"by":`)
	v.Reason = s.strField(`"reason":`)
	v.Scope = s.strField(`"scope":`)
	if s.key(`"cites":`) {
		v.Cites = s.int()
	}
	return v
}
