package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// RequestDigest returns the hex SHA-256 of the canonical encoding of a
// request: its header and messages. request/digest events record it for
// the request actually sent, so a verifier can re-derive the request from
// the log and compare.
//
// The canonical encoding is one line of UTF-8 JSON, no insignificant white
// space, exactly what Go's encoding/json.Marshal produces for
//
//	{"header":H,"messages":[M,…]}
//
// where H is the header normalized (empty tools and stop absent) and
// encoded with the fields, in this order and omitted when empty (zero):
// "provider", "model", "system", "tools" (each {"name", "description"
// omitted when empty, "parameters" omitted when empty or null, else the
// schema's JSON text with insignificant white space removed}),
// "temperature" (a number, present when set even if 0), "max_tokens",
// "stop", "output_schema" (the schema's JSON text with insignificant white
// space removed; absent when empty or null, so the digest of a header
// without one is what it was before the field existed); and each M is a message with, in this order, "role" (always),
// "content", "reasoning", "tool_calls" (each {"id","name","arguments"},
// all always present), "tool_call_id", "name", each omitted when empty.
// "messages" is [] when there are none. Strings are escaped as
// encoding/json does: '"' and '\\' backslash-escaped, \n \r \t \b \f by
// name, other control characters and '<', '>', '&', U+2028, U+2029 as
// \u00XX / \u2028 / \u2029 with lowercase hex, invalid UTF-8 bytes as
// \ufffd, everything else literal. Numbers are integers in decimal;
// temperature uses the shortest decimal that round-trips a float64, in
// exponent form (like 1e-07) only below 1e-6 or from 1e21 on.
func RequestDigest(h Header, msgs []Message) string {
	if msgs == nil {
		msgs = []Message{}
	}
	h = normalizeHeader(h)
	for i, t := range h.Tools {
		if isEmptyJSON(t.Parameters) {
			h.Tools = append([]ToolSpec(nil), h.Tools...)
			h.Tools[i].Parameters = nil
		}
	}
	b, err := json.Marshal(struct {
		Header   Header    `json:"header"`
		Messages []Message `json:"messages"`
	}{h, msgs})
	if err != nil {
		// Only invalid tool parameters or output schema JSON can fail;
		// digest them as text so the digest still differs from any valid
		// request's.
		if len(h.OutputSchema) > 0 && !json.Valid(h.OutputSchema) {
			q, _ := json.Marshal(string(h.OutputSchema))
			h.OutputSchema = q
		}
		for i := range h.Tools {
			if !json.Valid(h.Tools[i].Parameters) {
				q, _ := json.Marshal(string(h.Tools[i].Parameters))
				h.Tools = append([]ToolSpec(nil), h.Tools...)
				h.Tools[i].Parameters = q
			}
		}
		b, _ = json.Marshal(struct {
			Header   Header    `json:"header"`
			Messages []Message `json:"messages"`
		}{h, msgs})
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
