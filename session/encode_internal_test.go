package session

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The hand-rolled encoders must produce exactly what encoding/json does,
// so that the format has one definition.

func genString() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.String(),
		rapid.StringOf(rapid.RuneFrom([]rune{'<', '>', '&', '"', '\\', '\n', '\b', '\f', '\x00', '\x1f', '\u2028', '\u2029', 'é', 'a'})),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }), // invalid UTF-8
	)
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genString().Draw(t, "s")
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendString(nil, s)))
	})
}

func genPayload(t *rapid.T) any {
	str := genString()
	opt := func(name string) string {
		if rapid.Bool().Draw(t, name+"?") {
			return str.Draw(t, name)
		}
		return ""
	}
	calls := func() []ToolCall {
		n := rapid.IntRange(0, 3).Draw(t, "calls")
		if n == 0 {
			return nil
		}
		out := make([]ToolCall, n)
		for i := range out {
			out[i] = ToolCall{ID: opt("id"), Name: opt("name"), Arguments: opt("args")}
		}
		return out
	}
	switch rapid.IntRange(0, 16).Draw(t, "kind") {
	case 0:
		return TurnStart{Continues: rapid.IntRange(0, 3).Draw(t, "continues"), By: rapid.SampledFrom([]string{"", "alice", "bob@example.com"}).Draw(t, "by")}
	case 1:
		return TurnEnd{Reason: opt("reason"), Error: opt("error")}
	case 2:
		return StepStart{}
	case 3:
		var u *Usage
		if rapid.Bool().Draw(t, "usage") {
			u = &Usage{Input: rapid.Int().Draw(t, "in"), Output: rapid.Int().Draw(t, "out")}
		}
		return StepEnd{Finish: opt("finish"), Usage: u}
	case 4:
		return UserMessage{Content: opt("content"), Origin: opt("origin")}
	case 5:
		return Digest{SHA256: opt("sha"), Messages: rapid.Int().Draw(t, "n")}
	case 6:
		c := AssistantChunk{Text: opt("text"), Reasoning: opt("reasoning")}
		if rapid.Bool().Draw(t, "call") {
			c.ToolCall = &ChunkToolCall{Index: rapid.Int().Draw(t, "index"), ID: opt("id"), Name: opt("name"), Arguments: opt("args")}
		}
		return c
	case 7:
		return AssistantMessage{Content: opt("content"), Reasoning: opt("reasoning"), ToolCalls: calls()}
	case 8:
		return ToolCall{ID: opt("id"), Name: opt("name"), Arguments: opt("args")}
	case 9:
		return ToolStart{ID: opt("id")}
	case 10:
		r := ToolResult{ID: opt("id"), Name: opt("name"), Content: opt("content")}
		if rapid.Bool().Draw(t, "err") {
			r.Error = &ToolResultError{Code: opt("code"), Message: opt("message")}
		}
		return r
	case 11:
		return Compaction{ID: opt("id")}
	case 12:
		return EndSeed{}
	case 13:
		return ApprovalRequest{ID: opt("id"), By: opt("by"), Reason: opt("reason")}
	case 14:
		return ApprovalDecision{ID: opt("id"), Allow: rapid.Bool().Draw(t, "allow"), By: opt("by"), Reason: opt("reason"), Scope: opt("scope"), Cites: rapid.Int64().Draw(t, "cites")}
	case 15:
		return Usage{Input: rapid.Int().Draw(t, "in"), Output: rapid.Int().Draw(t, "out")}
	default:
		// Zero tool call list versus empty: both omitted.
		return AssistantMessage{ToolCalls: []ToolCall{}}
	}
}

func TestAppendPayloadMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPayload(t)
		want, err := json.Marshal(p)
		require.NoError(t, err)
		got, ok := appendPayload(nil, p)
		require.True(t, ok, "%T is encoded by hand", p)
		require.Equal(t, string(want), string(got))
	})
}

func TestAppendTimeMatchesLayout(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ms := rapid.Int64Range(-62135596800000, 253402300799999).Draw(t, "ms") // years 1..9999
		tm := logTime(time.UnixMilli(ms))
		want := `"` + tm.Format(timeLayout) + `"`
		require.Equal(t, want, string(appendTime(nil, tm)))
	})
}

// TestPlainWord: eight bytes are plain just when each is (safeASCII),
// whichever byte is not, wherever it stands, whatever stands around it.
func TestPlainWord(t *testing.T) {
	for _, fill := range []byte{'a', ' ', '~', 0x7f} {
		for pos := range 8 {
			for b := range 256 {
				w := bytes.Repeat([]byte{fill}, 8)
				w[pos] = byte(b)
				want := b < utf8.RuneSelf && safeASCII[b]
				if got := plainWord(string(w), 0); got != want {
					t.Fatalf("%q: plain %v, want %v", w, got, want)
				}
			}
		}
	}
}
