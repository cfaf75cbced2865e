package agentloop

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/vigil-run/vigil/session"
)

// tricky strings exercise every escaping rule of the canonical encoding.
var tricky = []string{"", "plain", "quote \" and \\ slash", "<html> & </html>", "line\nbreak\ttab\r", "\u2028\u2029", "\x00\x1f", "caf\xe9 invalid", "日本語", "emoji 🎉"}

func genString() *rapid.Generator[string] {
	return rapid.OneOf(rapid.SampledFrom(tricky), rapid.String())
}

func genMessage() *rapid.Generator[session.Message] {
	return rapid.Custom(func(t *rapid.T) session.Message {
		m := session.Message{Role: rapid.SampledFrom([]string{"user", "assistant", "tool"}).Draw(t, "role")}
		m.Content = genString().Draw(t, "content")
		if rapid.Bool().Draw(t, "reasoning") {
			m.Reasoning = genString().Draw(t, "r")
		}
		for range rapid.IntRange(0, 2).Draw(t, "calls") {
			m.ToolCalls = append(m.ToolCalls, session.ToolCall{ID: genString().Draw(t, "id"), Name: genString().Draw(t, "name"), Arguments: genString().Draw(t, "args")})
		}
		if rapid.Bool().Draw(t, "tool") {
			m.ToolCallID, m.Name = genString().Draw(t, "tcid"), genString().Draw(t, "n")
		}
		return m
	})
}

func genHeader() *rapid.Generator[session.Header] {
	return rapid.Custom(func(t *rapid.T) session.Header {
		h := session.Header{Provider: genString().Draw(t, "p"), Model: genString().Draw(t, "m"), System: genString().Draw(t, "s"), MaxTokens: rapid.IntRange(0, 5).Draw(t, "max")}
		if rapid.Bool().Draw(t, "temp") {
			v := rapid.SampledFrom([]float64{0, 0.2, 1e-7, 1.5, 1e21}).Draw(t, "tv")
			h.Temperature = &v
		}
		if rapid.Bool().Draw(t, "stop") {
			h.Stop = []string{genString().Draw(t, "stop0")}
		}
		for range rapid.IntRange(0, 2).Draw(t, "tools") {
			params := rapid.SampledFrom([]string{"", "null", "  ", `{"type":"object"}`, "{ \"type\" : \"object\", \"x\": \"<&>\" }"}).Draw(t, "params")
			h.Tools = append(h.Tools, session.ToolSpec{Name: genString().Draw(t, "tn"), Description: genString().Draw(t, "td"), Parameters: json.RawMessage(params)})
		}
		schema := rapid.SampledFrom([]string{"", "null", "  ", `{"type":"object"}`, "{ \"type\" : \"string\", \"title\": \"<&>\" }"}).Draw(t, "schema")
		h.OutputSchema = json.RawMessage(schema)
		return h
	})
}

// TestDigesterEqualsRequestDigest drives one digester through a sequence
// of requests — growing, shrinking, edited, with header changes — and
// requires every digest to equal session.RequestDigest.
func TestDigesterEqualsRequestDigest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var d digester
		h := genHeader().Draw(t, "header")
		var msgs, prev []session.Message
		for step := range rapid.IntRange(1, 8).Draw(t, "steps") {
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0, 1: // the usual: the conversation grows
				for range rapid.IntRange(0, 3).Draw(t, "grow") {
					msgs = append(msgs, genMessage().Draw(t, "msg"))
				}
			case 2: // a replace (compaction): a new fold, shorter
				if len(msgs) > 0 {
					i := rapid.IntRange(0, len(msgs)-1).Draw(t, "at")
					next := append([]session.Message(nil), msgs[:i]...)
					next = append(next, genMessage().Draw(t, "summary"))
					msgs = append(next, msgs[min(len(msgs), i+2):]...)
				}
			case 3:
				h = genHeader().Draw(t, "new header")
			case 4: // nothing changed
			}
			// Folds are immutable: a step sees either a fresh slice or,
			// like a session's fold, the same array grown in place.
			var fold []session.Message
			if grown := len(prev) <= len(msgs) && cap(prev) >= len(msgs) && slicesEqual(prev, msgs[:len(prev)]); grown && rapid.Bool().Draw(t, "in place") {
				fold = append(prev[:len(prev):cap(prev)], msgs[len(prev):]...)
			} else {
				fold = make([]session.Message, len(msgs), len(msgs)+8)
				copy(fold, msgs)
			}
			prev = fold[:len(fold):cap(fold)]
			fold = fold[:len(fold):len(fold)]
			got := d.digest(h, fold)
			want := session.RequestDigest(h, fold)
			if got != want {
				t.Fatalf("step %d: digest %s, RequestDigest %s", step, got, want)
			}
		}
	})
}

func TestDigesterFallsBackOnInvalidParameters(t *testing.T) {
	var d digester
	h := session.Header{Tools: []session.ToolSpec{{Name: "x", Parameters: json.RawMessage(`{not json`)}}}
	msgs := []session.Message{{Role: "user", Content: "hi"}}
	assert.Equal(t, session.RequestDigest(h, msgs), d.digest(h, msgs))
	h.Tools[0].Parameters = json.RawMessage(`{}`)
	assert.Equal(t, session.RequestDigest(h, msgs), d.digest(h, msgs))
}

func TestDigesterOfEmptyRequest(t *testing.T) {
	var d digester
	require.Equal(t, session.RequestDigest(session.Header{}, nil), d.digest(session.Header{}, nil))
}

func slicesEqual(a, b []session.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(&b[i]) {
			return false
		}
	}
	return true
}

// The cache is keyed by content it owns: writing the slice it was given,
// in place, after a digest never makes a stale encoding look current.
func TestDigesterIsNotFooledByWritesToItsInput(t *testing.T) {
	h := session.Header{Model: "m"}
	msgs := []session.Message{{Role: "user", Content: "hello"}, {Role: "assistant", ToolCalls: []session.ToolCall{{ID: "c1", Name: "calc", Arguments: "{}"}}}}
	var d digester
	require.Equal(t, session.RequestDigest(h, msgs), d.digest(h, msgs))
	msgs[0].Content = "forged"
	msgs[1].ToolCalls[0].Name = "forged"
	msgs = append(msgs, session.Message{Role: "user", Content: "next"})
	assert.Equal(t, session.RequestDigest(h, msgs), d.digest(h, msgs))
}
