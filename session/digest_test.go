package session_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-run/vigil/session"
)

func TestRequestDigestIsSHA256OfDocumentedEncoding(t *testing.T) {
	temp := 0.2
	h := session.Header{
		Provider: "openai", Model: "gpt", System: "be <brief>", Temperature: &temp, MaxTokens: 100, Stop: []string{"\n"},
		Tools: []session.ToolSpec{{Name: "f", Parameters: json.RawMessage("{ \"type\": \"object\" }")}},
	}
	msgs := []session.Message{
		{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []session.ToolCall{{ID: "c", Name: "f", Arguments: ""}}},
		{Role: "tool", Content: "ok", ToolCallID: "c", Name: "f"},
	}
	canonical := `{"header":{"provider":"openai","model":"gpt","system":"be \u003cbrief\u003e","tools":[{"name":"f","parameters":{"type":"object"}}],"temperature":0.2,"max_tokens":100,"stop":["\n"]},` +
		`"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","name":"f","arguments":""}]},{"role":"tool","content":"ok","tool_call_id":"c","name":"f"}]}`
	sum := sha256.Sum256([]byte(canonical))
	assert.Equal(t, hex.EncodeToString(sum[:]), session.RequestDigest(h, msgs))

	empty := sha256.Sum256([]byte(`{"header":{},"messages":[]}`))
	assert.Equal(t, hex.EncodeToString(empty[:]), session.RequestDigest(session.Header{}, nil))
}

func TestRequestDigestEqualityFollowsModelVisibleEquality(t *testing.T) {
	zero := 0.0
	base := session.Header{Model: "m"}
	msgs := []session.Message{{Role: "user", Content: "a"}}
	d := session.RequestDigest(base, msgs)
	same := []struct {
		name string
		h    session.Header
		msgs []session.Message
	}{
		{"empty tools and stop are absent", session.Header{Model: "m", Tools: []session.ToolSpec{}, Stop: []string{}}, msgs},
		{"a copy of the messages", base, append([]session.Message(nil), msgs...)},
	}
	for _, tt := range same {
		assert.Equal(t, d, session.RequestDigest(tt.h, tt.msgs), tt.name)
	}
	differ := []struct {
		name string
		h    session.Header
		msgs []session.Message
	}{
		{"another model", session.Header{Model: "n"}, msgs},
		{"temperature 0 is not absent", session.Header{Model: "m", Temperature: &zero}, msgs},
		{"a system prompt", session.Header{Model: "m", System: "s"}, msgs},
		{"no messages", base, nil},
		{"another role", base, []session.Message{{Role: "assistant", Content: "a"}}},
		{"more messages", base, append(msgs, session.Message{Role: "user", Content: "a"})},
	}
	for _, tt := range differ {
		assert.NotEqual(t, d, session.RequestDigest(tt.h, tt.msgs), tt.name)
	}
	// Tool parameters compare as JSON text without white space; absent
	// and null parameters are the same.
	p1 := session.Header{Tools: []session.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"a": 1}`)}}}
	p2 := session.Header{Tools: []session.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"a":1}`)}}}
	assert.Equal(t, session.RequestDigest(p1, nil), session.RequestDigest(p2, nil))
	n1 := session.Header{Tools: []session.ToolSpec{{Name: "f", Parameters: json.RawMessage(`null`)}}}
	n2 := session.Header{Tools: []session.ToolSpec{{Name: "f"}}}
	assert.Equal(t, session.RequestDigest(n1, nil), session.RequestDigest(n2, nil))
	// Invalid parameters do not panic and do not collide with valid ones.
	bad := session.Header{Tools: []session.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{`)}}}
	assert.NotEqual(t, session.RequestDigest(n2, nil), session.RequestDigest(bad, nil))
}
