package session_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// TestRequestDigestWithoutOutputSchemaIsUnchanged pins digests computed
// before Header had output_schema: a header without one (or with null)
// must keep digesting the same, so every log written before still
// verifies.
func TestRequestDigestWithoutOutputSchemaIsUnchanged(t *testing.T) {
	temp := 0.2
	full := session.Header{
		Provider: "scripted", Model: "m", System: "be brief", Temperature: &temp, MaxTokens: 64, Stop: []string{"\n\n"},
		Tools: []session.ToolSpec{{Name: "list_dir", Description: "list", Parameters: json.RawMessage(`{"type": "object"}`)}},
	}
	msgs := []session.Message{
		{Role: "user", Content: "question 1 <&>\n\"quoted\" é \u2028"},
		{Role: "assistant", Reasoning: "look", ToolCalls: []session.ToolCall{{ID: "call_1", Name: "list_dir", Arguments: `{"path":"."}`}}},
		{Role: "tool", Content: "a.txt", ToolCallID: "call_1", Name: "list_dir"},
	}
	nullSchema := full
	nullSchema.OutputSchema = json.RawMessage(" null ")
	cases := []struct {
		name string
		h    session.Header
		msgs []session.Message
		want string
	}{
		{"empty", session.Header{}, nil, "59fb388b5101c25de290650284af96eeaf8a8316dbd87c7a5672e7d730ba2797"},
		{"full header, a conversation", full, msgs, "1c30c278410ade6b6eed1e14238cd4d7c3a249f35a13c38c646609888dfc986b"},
		{"null output_schema is absent", nullSchema, msgs, "1c30c278410ade6b6eed1e14238cd4d7c3a249f35a13c38c646609888dfc986b"},
		{"model only", session.Header{Model: "gpt"}, msgs[:1], "20d8d5610edfeec375582a748d42513a1eb415cba60cae6d9f26d29c580ee576"},
	}
	for _, tt := range cases {
		assert.Equal(t, tt.want, session.RequestDigest(tt.h, tt.msgs), tt.name)
	}
}

func TestRequestDigestEncodesOutputSchemaLast(t *testing.T) {
	h := session.Header{Model: "m", Stop: []string{"x"}, OutputSchema: json.RawMessage("{ \"type\": \"object\", \"title\": \"<a>\" }")}
	canonical := `{"header":{"model":"m","stop":["x"],"output_schema":{"type":"object","title":"\u003ca\u003e"}},"messages":[]}`
	sum := sha256.Sum256([]byte(canonical))
	assert.Equal(t, hex.EncodeToString(sum[:]), session.RequestDigest(h, nil))

	without := session.RequestDigest(session.Header{Model: "m", Stop: []string{"x"}}, nil)
	assert.NotEqual(t, without, session.RequestDigest(h, nil), "the schema is model-visible")
	// Invalid schema JSON does not panic and does not collide.
	bad := session.Header{Model: "m", Stop: []string{"x"}, OutputSchema: json.RawMessage(`{`)}
	assert.NotEqual(t, without, session.RequestDigest(bad, nil))
}

func TestHeaderEqualsComparesOutputSchema(t *testing.T) {
	a := session.Header{Model: "m", OutputSchema: json.RawMessage(`{"type":"object"}`)}
	cases := []struct {
		name  string
		b     session.Header
		equal bool
	}{
		{"same text", session.Header{Model: "m", OutputSchema: json.RawMessage(`{"type":"object"}`)}, true},
		{"white space is insignificant", session.Header{Model: "m", OutputSchema: json.RawMessage("{ \"type\" : \"object\" }")}, true},
		{"another schema", session.Header{Model: "m", OutputSchema: json.RawMessage(`{"type":"array"}`)}, false},
		{"no schema", session.Header{Model: "m"}, false},
	}
	for _, tt := range cases {
		assert.Equal(t, tt.equal, session.HeaderEquals(a, tt.b), tt.name)
		assert.Equal(t, tt.equal, session.HeaderEquals(tt.b, a), tt.name)
	}
	assert.True(t, session.HeaderEquals(session.Header{OutputSchema: json.RawMessage(`null`)}, session.Header{}), "null is absent")
}

// TestOutputSchemaAndOriginRoundTrip: a request/header with an output
// schema and a user/message with an origin are logged, decode from their
// canonical lines and fold as before (the origin is not model-visible).
func TestOutputSchemaAndOriginRoundTrip(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["a"]}`)
	recs := records(t,
		session.Event{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: session.Header{Model: "m", OutputSchema: schema}}},
		session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "fix it", Origin: session.OriginOutputValidation}},
	)
	line := string(recs[1].Bytes())
	assert.Contains(t, line, `"data":{"content":"fix it","origin":"output-validation"}`)
	back, err := session.DecodeRecord(recs[1].Bytes())
	require.NoError(t, err)
	um, err := session.DecodeData[session.UserMessage](back)
	require.NoError(t, err)
	assert.Equal(t, session.OriginOutputValidation, um.Origin)

	assert.Contains(t, string(recs[0].Bytes()), `"output_schema":{"type":"object","required":["a"]}}`)
	h, ok := session.DeriveHeader(recs)
	require.True(t, ok)
	assert.JSONEq(t, string(schema), string(h.OutputSchema))

	msgs, err := session.DeriveMessages(recs)
	require.NoError(t, err)
	assert.Equal(t, []session.Message{{Role: "user", Content: "fix it"}}, msgs)
}
