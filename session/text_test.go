package session_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// requireHeldLine checks what every record must be: its line valid UTF-8
// that decodes to the same line, and to the same payload.
func requireHeldLine(t *testing.T, r session.Record) {
	t.Helper()
	line := r.Bytes()
	require.True(t, utf8.Valid(line), "line %q", line)
	require.True(t, utf8.ValidString(r.Type()))
	again, err := session.DecodeRecord(line)
	require.NoError(t, err, "line %s", line)
	require.Equal(t, string(line), string(again.Bytes()))
	want, err := session.DecodeData[any](r)
	require.NoError(t, err)
	got, err := session.DecodeData[any](again)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestRecordsHoldValidUTF8: whatever bytes a record is made from (a
// payload value or a pointer to one, core JSON, a plugin's value or JSON,
// the type), it holds valid UTF-8, each invalid byte replaced by U+FFFD
// as encoding/json does; its line decodes to it again.
func TestRecordsHoldValidUTF8(t *testing.T) {
	const bad = "caf\xc3 \xe2\x98 \xff \uFFFD ok"
	held := "caf\uFFFD \uFFFD\uFFFD \uFFFD \uFFFD ok"
	var viaJSON string // encoding/json's reading of the same bytes
	b, err := json.Marshal(bad)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &viaJSON))
	require.Equal(t, viaJSON, held)

	rawBad := []byte(`{"content":"` + bad + `"}`)
	cases := []struct {
		name  string
		ev    session.Event
		check func(t *testing.T, r session.Record)
	}{
		{"a payload value", session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: bad, Origin: bad}}, func(t *testing.T, r session.Record) {
			m, err := session.DecodeData[session.UserMessage](r)
			require.NoError(t, err)
			assert.Equal(t, session.UserMessage{Content: held, Origin: held}, m)
		}},
		{"a pointer to one", session.Event{Type: session.TypeUserMessage, Data: &session.UserMessage{Content: bad}}, func(t *testing.T, r session.Record) {
			m, err := session.DecodeData[session.UserMessage](r)
			require.NoError(t, err)
			assert.Equal(t, held, m.Content)
		}},
		{"core JSON", session.Event{Type: session.TypeUserMessage, Data: json.RawMessage(rawBad)}, func(t *testing.T, r session.Record) {
			m, err := session.DecodeData[session.UserMessage](r)
			require.NoError(t, err)
			assert.Equal(t, held, m.Content)
		}},
		{"nested fields", session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Data: session.AssistantMessage{
			Content: bad, ToolCalls: []session.ToolCall{{ID: "c" + bad, Name: "n" + bad, Arguments: bad}},
		}}, func(t *testing.T, r session.Record) {
			m, err := session.DecodeData[session.AssistantMessage](r)
			require.NoError(t, err)
			assert.Equal(t, session.AssistantMessage{Content: held, ToolCalls: []session.ToolCall{{ID: "c" + held, Name: "n" + held, Arguments: held}}}, m)
		}},
		{"a header and its raw JSON", session.Event{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: session.Header{
			System: bad, Stop: []string{bad}, Tools: []session.ToolSpec{{Name: "t", Description: bad, Parameters: json.RawMessage(rawBad)}},
		}}}, func(t *testing.T, r session.Record) {
			h, err := session.DecodeData[session.RequestHeader](r)
			require.NoError(t, err)
			assert.Equal(t, held, h.Header.System)
			assert.Equal(t, []string{held}, h.Header.Stop)
			assert.Equal(t, held, h.Header.Tools[0].Description)
			assert.JSONEq(t, `{"content":"`+held+`"}`, string(h.Header.Tools[0].Parameters))
			assert.True(t, utf8.Valid(h.Header.Tools[0].Parameters))
		}},
		{"a plugin's value", session.Event{Type: "x/note", Ignorable: true, Data: map[string]any{"k": bad, bad: json.RawMessage(rawBad)}}, func(t *testing.T, r session.Record) {
			var v map[string]any
			require.NoError(t, json.Unmarshal(r.Data(), &v))
			assert.Equal(t, map[string]any{"k": held, held: map[string]any{"content": held}}, v)
		}},
		{"a plugin's JSON", session.Event{Type: "x/note", Ignorable: true, Data: json.RawMessage(rawBad)}, func(t *testing.T, r session.Record) {
			assert.Equal(t, `{"content":"`+held+`"}`, string(r.Data()))
		}},
		{"the type", session.Event{Type: "x/" + bad, Ignorable: true, Data: map[string]int{}}, func(t *testing.T, r session.Record) {
			assert.Equal(t, "x/"+held, r.Type())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := session.NewRecord(3, epoch, c.ev)
			require.NoError(t, err)
			c.check(t, r)
			requireHeldLine(t, r)
		})
	}
}

// TestFoldAndDigestSeeTheHeldText: the fold of records made from invalid
// UTF-8 is their held text, and its digest re-derives from the stored
// lines.
func TestFoldAndDigestSeeTheHeldText(t *testing.T) {
	l := newHarness(t).create()
	ctx := t.Context()
	for _, ev := range []session.Event{
		{Type: session.TypeTurnStart, Turn: 1},
		{Type: session.TypeUserMessage, Turn: 1, Data: session.UserMessage{Content: "caf\xc3"}},
		{Type: session.TypeStepStart, Turn: 1, Step: 1},
	} {
		_, err := l.Append(ctx, ev)
		require.NoError(t, err)
	}
	msgs, err := session.DeriveMessages(l.Records())
	require.NoError(t, err)
	require.Equal(t, []session.Message{{Role: session.RoleUser, Content: "caf\uFFFD"}}, msgs)

	var data []byte
	for _, r := range l.Records() {
		data = r.AppendLine(data)
	}
	log, err := session.DecodeBytes(append(session.AppendHeaderLine(nil, l.Info()), data...))
	require.NoError(t, err)
	again, err := session.DeriveMessages(log.Records)
	require.NoError(t, err)
	require.Equal(t, session.RequestDigest(session.Header{}, msgs), session.RequestDigest(session.Header{}, again))
}

// legacyTime is the time of the legacy lines below.
const legacyTime = `"time":"2026-12-01T22:40:09.631Z"`

// TestLegacyLinesReadAsWritten: lines written before records held valid
// UTF-8 only spelled an invalid byte of a string as \ufffd, and kept raw
// JSON as given. They decode, re-encode to themselves, and fold to what
// their digests were computed over (a string with an invalid byte where
// each escape is, beside a U+FFFD that was one).
func TestLegacyLinesReadAsWritten(t *testing.T) {
	cases := []struct {
		name  string
		line  string
		check func(t *testing.T, r session.Record)
	}{
		{"a core string", `{"seq":1,"type":"user/message",` + legacyTime + `,"turn":1,"data":{"content":"caf\ufffd \ufffd\ufffd �"}}`, func(t *testing.T, r session.Record) {
			m, err := session.DecodeData[session.UserMessage](r)
			require.NoError(t, err)
			assert.Equal(t, "caf\xff \xff\xff \uFFFD", m.Content)
			msgs, err := session.DeriveMessages([]session.Record{r})
			require.NoError(t, err)
			// The digest line holds the escapes, as it did.
			line := `{"header":{},"messages":[{"role":"user","content":"caf\ufffd \ufffd\ufffd �"}]}`
			sum := sha256.Sum256([]byte(line))
			assert.Equal(t, hex.EncodeToString(sum[:]), session.RequestDigest(session.Header{}, msgs))
		}},
		{"a chunk, whose payload a loaded log drops", `{"seq":5,"type":"assistant/chunk",` + legacyTime + `,"turn":1,"step":1,"data":{"text":"bad\ufffd.txt, "}}`, func(t *testing.T, r session.Record) {
			c, err := session.DecodeData[session.AssistantChunk](r)
			require.NoError(t, err)
			assert.Equal(t, "bad\xff.txt, ", c.Text)
		}},
		{"a header with raw JSON", `{"seq":3,"type":"request/header",` + legacyTime + `,"turn":1,"data":{"reason":"initial","header":{"system":"s\ufffd","tools":[{"name":"t","parameters":{"d":"\ufffd` + "\xe9" + `�"}}]}}}`, func(t *testing.T, r session.Record) {
			h, err := session.DecodeData[session.RequestHeader](r)
			require.NoError(t, err)
			assert.Equal(t, "s\xff", h.Header.System)
			assert.Equal(t, `{"d":"\ufffd`+"\xe9"+`�"}`, string(h.Header.Tools[0].Parameters))
		}},
		{"a plugin's raw JSON", `{"seq":2,"type":"x/note",` + legacyTime + `,"ignorable":true,"data":{"k\ufffd":"` + "\xe9" + `"}}`, func(t *testing.T, r session.Record) {
			assert.Equal(t, `{"k\ufffd":"`+"\xe9"+`"}`, string(r.Data()))
		}},
		{"the type", `{"seq":2,"type":"x/\ufffd",` + legacyTime + `,"ignorable":true,"data":{}}`, func(t *testing.T, r session.Record) {
			assert.Equal(t, "x/\xff", r.Type())
		}},
		{"a line holding the first stand-in", `{"seq":1,"type":"user/message",` + legacyTime + `,"turn":1,"data":{"content":"` + "\uFDD0" + `\ufffd"}}`, func(t *testing.T, r session.Record) {
			m, err := session.DecodeData[session.UserMessage](r)
			require.NoError(t, err)
			assert.Equal(t, "\uFDD0\xff", m.Content)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := session.DecodeRecord([]byte(c.line))
			require.NoError(t, err)
			assert.Equal(t, c.line, string(r.Bytes()))
			c.check(t, r)

			// Loaded as part of a log (which keeps some payloads only
			// as their lines), the record holds the same.
			log, err := session.DecodeBytes([]byte(`{"type":"session","version":1,"id":"s1","created":"2026-12-01T22:40:09.000Z"}` + "\n" + legacyPrefix(r.Seq()) + c.line + "\n"))
			require.NoError(t, err)
			loaded := log.Records[len(log.Records)-1]
			assert.Equal(t, c.line, string(loaded.Bytes()))
			c.check(t, loaded)
		})
	}
}

// legacyPrefix returns lines of seqs 0 to seq-1 that the legacy lines
// above can follow: a turn and step open.
func legacyPrefix(seq int64) string {
	lines := []string{
		`{"seq":0,"type":"turn/start",` + legacyTime + `,"turn":1,"data":{}}`,
		`{"seq":1,"type":"user/message",` + legacyTime + `,"turn":1,"data":{"content":"hi"}}`,
		`{"seq":2,"type":"step/start",` + legacyTime + `,"turn":1,"step":1,"data":{}}`,
		`{"seq":3,"type":"request/digest",` + legacyTime + `,"turn":1,"step":1,"data":{"sha256":"00","messages":1}}`,
		`{"seq":4,"type":"assistant/chunk",` + legacyTime + `,"turn":1,"step":1,"data":{"text":"a"}}`,
	}
	return strings.Join(lines[:seq], "\n") + "\n"
}

// TestLegacySpellingIsNoLicence: the escape reads as an invalid byte only
// where the old encoder wrote it; other spellings of U+FFFD in a core
// string stay refused, and the escaped text `\ufffd` is text.
func TestLegacySpellingIsNoLicence(t *testing.T) {
	for _, content := range []string{`\uFFFD`, `\ufffD`, `\u00e9`, "\xff"} {
		_, err := session.DecodeRecord([]byte(`{"seq":1,"type":"user/message",` + legacyTime + `,"data":{"content":"` + content + `"}}`))
		require.ErrorIs(t, err, session.ErrMalformed, content)
	}
	r, err := session.DecodeRecord([]byte(`{"seq":1,"type":"user/message",` + legacyTime + `,"data":{"content":"\\ufffd"}}`))
	require.NoError(t, err)
	m, err := session.DecodeData[session.UserMessage](r)
	require.NoError(t, err)
	require.Equal(t, `\ufffd`, m.Content)
}

// TestValidText: the rule on its own, for what is compared with records.
func TestValidText(t *testing.T) {
	h := session.Header{System: "a\xff", Tools: []session.ToolSpec{{Name: "t", Parameters: json.RawMessage("{\"d\":\"\xe9\"}")}}}
	got := session.ValidText(h)
	assert.Equal(t, "a\uFFFD", got.System)
	assert.Equal(t, "{\"d\":\"\uFFFD\"}", string(got.Tools[0].Parameters))
	assert.Equal(t, "a\xff", h.System, "the argument is not written")
	assert.Equal(t, "{\"d\":\"\xe9\"}", string(h.Tools[0].Parameters))
	valid := []session.Message{{Role: "user", Content: "é"}}
	assert.Equal(t, valid, session.ValidText(valid))
	// A header differing from its logged copy only in what the record
	// replaced is the same header.
	assert.True(t, session.HeaderEquals(h, got))
	assert.False(t, session.HeaderEquals(h, session.Header{System: "a"}))
}

// TestLegacyLogsLoadAndTheirDigestsReDerive: the logs in
// testdata/legacy-utf8, written by the old code from a prompt, a file
// name and files that are not UTF-8, load, re-encode to their bytes, and
// every digest re-derives from them.
func TestLegacyLogsLoadAndTheirDigestsReDerive(t *testing.T) {
	files, err := filepath.Glob("testdata/legacy-utf8/*.jsonl")
	require.NoError(t, err)
	require.Len(t, files, 2)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			require.Contains(t, string(data), `\ufffd`)
			log, err := session.DecodeBytes(data)
			require.NoError(t, err)
			enc := session.AppendHeaderLine(nil, log.Info)
			for _, r := range log.Records {
				enc = r.AppendLine(enc)
			}
			require.Equal(t, string(data), string(enc))

			digests, start := 0, 0
			for i, r := range log.Records {
				switch r.Type() {
				case session.TypeStepStart:
					start = i
				case session.TypeRequestDigest:
					d, err := session.DecodeData[session.Digest](r)
					require.NoError(t, err)
					msgs, h, _, err := session.DeriveRequest(log.Records[:i], start)
					require.NoError(t, err)
					assert.Equal(t, d.SHA256, session.RequestDigest(h, msgs), "seq %d", r.Seq())
					digests++
				}
			}
			require.Equal(t, 2, digests)
		})
	}
}

// TestAHeaderIsHeldAsItsLineDecodes: encoding/json compacts a schema and
// escapes its HTML characters; the record holds it so, as a decoded one
// would, so the header in memory and on disk are the same bytes.
func TestAHeaderIsHeldAsItsLineDecodes(t *testing.T) {
	for _, params := range []string{`{ "type": "object" }`, `{"description":"a <b> & c"}`, "{\"d\":\"\u2028\"}", `{"type":"object"}`} {
		r, err := session.NewRecord(3, epoch, session.Event{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderInitial,
			Header: session.Header{Tools: []session.ToolSpec{{Name: "t", Parameters: json.RawMessage(params)}}, OutputSchema: json.RawMessage(params)}}})
		require.NoError(t, err)
		requireHeldLine(t, r)
	}
}
