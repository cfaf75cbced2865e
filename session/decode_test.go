package session_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

var update = flag.Bool("update", false, "rewrite golden files")

const header = `{"type":"session","version":1,"id":"s1","created":"2026-11-29T20:21:24.000Z"}`

func line(s string) string { return s + "\n" }

var (
	l0 = `{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{"content":"a"}}`
	l1 = `{"seq":1,"type":"user/message","time":"2026-11-29T20:21:24.001Z","data":{"content":"b"}}`
	l2 = `{"seq":2,"type":"user/message","time":"2026-11-29T20:21:24.002Z","data":{"content":"c"}}`
)

func TestDecodeReadsValidLogs(t *testing.T) {
	tests := []struct {
		name     string
		log      string
		records  int
		messages int
	}{
		{"header only", line(header), 0, 0},
		{"three messages", line(header) + line(l0) + line(l1) + line(l2), 3, 3},
		{"an ignorable unknown type is kept and skipped by the fold",
			line(header) + line(l0) + line(`{"seq":1,"type":"memo/x","time":"2026-11-29T20:21:24.001Z","ignorable":true,"data":[1,2]}`), 2, 1},
		{"a replace", line(header) + line(l0) + line(l1) +
			line(`{"seq":2,"type":"user/message","time":"2026-11-29T20:21:24.002Z","surface":{"op":"replace","start":0,"end":1},"sources":[0,1],"data":{"content":"sum"}}`), 3, 1},
		{"a fork header", line(`{"type":"session","version":1,"id":"s2","created":"2026-11-29T20:21:24.000Z","parent":{"id":"s1","seq":0}}`) + line(l0), 1, 1},
		{"a header names the tenant and creator", line(`{"type":"session","version":1,"id":"s2","created":"2026-11-29T20:21:24.000Z","tenant":"acme","by":"alice@example.com","parent":{"id":"s1","seq":0}}`) + line(l0), 1, 1},
		{"a turn/start names who posted the turn", line(header) + line(`{"seq":0,"type":"turn/start","time":"2026-11-29T20:21:24.000Z","turn":1,"data":{"by":"bob"}}`), 1, 0},
		{"a child session's header names the call", line(`{"type":"session","version":1,"id":"s2","created":"2026-11-29T20:21:24.000Z","parent":{"id":"s1","seq":4,"call":"call_1"}}`) + line(l0), 1, 1},
		{"escapes as the encoder writes them", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{"content":"\u003c\u0026\u003e é \u2028 \"q\"\n"}}`), 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, err := session.Decode(strings.NewReader(tt.log))
			require.NoError(t, err)
			assert.Len(t, log.Records, tt.records)
			assert.Equal(t, int64(len(tt.log)), log.Size)
			assert.Zero(t, log.Torn)
			msgs, err := session.DeriveMessages(log.Records)
			require.NoError(t, err)
			assert.Len(t, msgs, tt.messages)
		})
	}
}

func TestDecodeRefusesBadInputWithDistinctErrors(t *testing.T) {
	sentinels := []error{
		session.ErrMalformed, session.ErrTornTail, session.ErrVersion, session.ErrUnknownType,
		session.ErrSeqGap, session.ErrDuplicateSeq, session.ErrInvalidReplace, session.ErrInvalidPayload,
		session.ErrInvalidEvent,
	}
	tests := []struct {
		name    string
		log     string
		err     error
		corrupt bool // also ErrCorrupt, with the line
		line    int
	}{
		{"seq gap", line(header) + line(l0) + line(l2), session.ErrSeqGap, true, 3},
		{"duplicate seq", line(header) + line(l0) + line(l1) + line(l1), session.ErrDuplicateSeq, true, 4},
		{"first seq not 0", line(header) + line(l1), session.ErrSeqGap, true, 2},
		{"unknown type", line(header) + line(l0) + line(`{"seq":1,"type":"memo/x","time":"2026-11-29T20:21:24.001Z","data":{}}`), session.ErrUnknownType, false, 3},
		{"wrong version", line(`{"type":"session","version":2,"id":"s1","created":"2026-11-29T20:21:24Z"}`) + line(l0), session.ErrVersion, false, 1},
		{"corrupt middle line", line(header) + line(l0) + line(`{"seq":1,"type":"user/mes`) + line(l2), session.ErrMalformed, true, 3},
		{"blank middle line", line(header) + line(l0) + "\n" + line(l1), session.ErrMalformed, true, 3},
		{"torn tail", line(header) + line(l0) + `{"seq":1,"type":"user/mes`, session.ErrTornTail, true, 3},
		{"complete last line without newline is torn too", line(header) + line(l0) + l1, session.ErrTornTail, true, 3},
		{"torn header", `{"type":"session","vers`, session.ErrTornTail, true, 1},
		{"empty", "", session.ErrMalformed, true, 1},
		{"invalid replace: not on surface", line(header) + line(l0) +
			line(`{"seq":1,"type":"user/message","time":"2026-11-29T20:21:24.001Z","surface":{"op":"replace","start":0,"end":0},"sources":[0],"data":{"content":"s"}}`) +
			line(`{"seq":2,"type":"user/message","time":"2026-11-29T20:21:24.002Z","surface":{"op":"replace","start":0,"end":0},"sources":[0],"data":{"content":"s"}}`),
			session.ErrInvalidReplace, true, 4},
		{"invalid replace: shadowed event not cited", line(header) + line(l0) + line(l1) +
			line(`{"seq":2,"type":"user/message","time":"2026-11-29T20:21:24.002Z","surface":{"op":"replace","start":0,"end":1},"sources":[0],"data":{"content":"s"}}`),
			session.ErrInvalidReplace, true, 4},
		{"non-JSON payload", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.000Z","data":"hello"}`), session.ErrInvalidPayload, true, 2},
		{"mistyped payload", line(header) + line(`{"seq":0,"type":"tool/result","time":"2026-11-29T20:21:24.000Z","turn":1,"step":1,"data":{"id":7}}`), session.ErrInvalidPayload, true, 2},
		{"missing step", line(header) + line(`{"seq":0,"type":"assistant/chunk","time":"2026-11-29T20:21:24.000Z","turn":1,"data":{"text":"x"}}`), session.ErrInvalidEvent, true, 2},
		{"unknown envelope field", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.000Z","colour":1,"data":{}}`), session.ErrMalformed, true, 2},
		{"missing seq", line(header) + line(`{"type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{}}`), session.ErrMalformed, true, 2},
		{"bad time", line(header) + line(`{"seq":0,"type":"user/message","time":"yesterday","data":{}}`), session.ErrMalformed, true, 2},
		{"trailing garbage", line(header) + line(l0+` x`), session.ErrMalformed, true, 2},
		{"header of another type", line(`{"type":"log","version":1,"id":"s1","created":"2026-11-29T20:21:24Z"}`), session.ErrMalformed, true, 1},
		{"header with a bad id", line(`{"type":"session","version":1,"id":"../x","created":"2026-11-29T20:21:24Z"}`), session.ErrMalformed, true, 1},
		{"missing data", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.000Z"}`), session.ErrMalformed, true, 2},
		{"envelope key in another case", line(header) + line(`{"seq":0,"tYpe":"user/message","time":"2026-11-29T20:21:24.000Z","data":{}}`), session.ErrMalformed, true, 2},
		{"data key in upper case", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.000Z","DATA":{"content":"a"}}`), session.ErrMalformed, true, 2},
		{"repeated key", line(header) + line(`{"seq":0,"type":"user/message","type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{}}`), session.ErrMalformed, true, 2},
		{"time with a comma", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T00:00:00,000Z","data":{}}`), session.ErrMalformed, true, 2},
		{"time without milliseconds", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24Z","data":{}}`), session.ErrMalformed, true, 2},
		{"time with an offset", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T21:21:24.000+01:00","data":{}}`), session.ErrMalformed, true, 2},
		{"time with more digits", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.0004Z","data":{}}`), session.ErrMalformed, true, 2},
		{"fields in another order", line(header) + line(`{"data":{"content":"a"},"type":"user/message","seq":0,"time":"2026-11-29T20:21:24.000Z"}`), session.ErrMalformed, true, 2},
		{"white space", line(header) + line(`{"seq":0, "type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{"content":"a"}}`), session.ErrMalformed, true, 2},
		{"a zero turn written out", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.000Z","turn":0,"data":{"content":"a"}}`), session.ErrMalformed, true, 2},
		{"payload key in another case", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{"Content":"a"}}`), session.ErrMalformed, true, 2},
		{"payload escape the encoder does not write", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{"content":"\u0061"}}`), session.ErrMalformed, true, 2},
		{"unknown payload field", line(header) + line(`{"seq":0,"type":"user/message","time":"2026-11-29T20:21:24.000Z","data":{"content":"a","colour":1}}`), session.ErrInvalidPayload, true, 2},
		{"plugin data with white space", line(header) + line(`{"seq":0,"type":"memo/x","time":"2026-11-29T20:21:24.000Z","ignorable":true,"data":[1, 2]}`), session.ErrMalformed, true, 2},
		{"header key in another case", line(`{"type":"session","version":1,"id":"s1","Created":"2026-11-29T20:21:24.000Z"}`), session.ErrMalformed, true, 1},
		{"header time without milliseconds", line(`{"type":"session","version":1,"id":"s1","created":"2026-11-29T20:21:24Z"}`), session.ErrMalformed, true, 1},
		{"header fields in another order", line(`{"version":1,"type":"session","id":"s1","created":"2026-11-29T20:21:24.000Z"}`), session.ErrMalformed, true, 1},
		{"header with an empty tenant", line(`{"type":"session","version":1,"id":"s1","created":"2026-11-29T20:21:24.000Z","tenant":""}`), session.ErrMalformed, true, 1},
		{"header with by before tenant", line(`{"type":"session","version":1,"id":"s1","created":"2026-11-29T20:21:24.000Z","by":"a","tenant":"t"}`), session.ErrMalformed, true, 1},
		{"header with the tenant after the parent", line(`{"type":"session","version":1,"id":"s2","created":"2026-11-29T20:21:24.000Z","parent":{"id":"s1","seq":0},"tenant":"t"}`), session.ErrMalformed, true, 1},
		{"header with an unknown field", line(`{"type":"session","version":1,"id":"s1","created":"2026-11-29T20:21:24.000Z","colour":1}`), session.ErrMalformed, true, 1},
		{"header without version", line(`{"type":"session","id":"s1","created":"2026-11-29T20:21:24Z"}`), session.ErrMalformed, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, err := session.Decode(strings.NewReader(tt.log))
			require.ErrorIs(t, err, tt.err)
			for _, s := range sentinels {
				if s != tt.err {
					assert.NotErrorIs(t, err, s, "only %v", tt.err)
				}
			}
			assert.Equal(t, tt.corrupt, errors.Is(err, session.ErrCorrupt))
			var ce *session.CorruptError
			if tt.corrupt {
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, tt.line, ce.Line)
			}
			assert.Contains(t, err.Error(), "line "+strconv.Itoa(tt.line))
			if errors.Is(err, session.ErrTornTail) && tt.line > 1 {
				require.NotNil(t, log, "a torn tail leaves the rest of the log")
				assert.Len(t, log.Records, tt.line-2)
				assert.Equal(t, len(tt.log)-int(log.Size), log.Torn)
			} else {
				assert.Nil(t, log)
			}
		})
	}
}

// goldenLog is a session with two complete turns, a compaction replacing
// the first, an ignorable plugin event and a fork of it.
func goldenLog(t *testing.T) []byte {
	t.Helper()
	h := newHarness(t)
	s := h.create()
	h.appendAll(s, turnEvents(t, 0, 1)...)
	h.appendAll(s, turnEvents(t, 17, 2)...)
	surface := session.NewFold()
	for _, r := range s.Records() {
		require.NoError(t, surface.Add(r))
	}
	seqs := surface.Surface()
	h.appendAll(s,
		session.Event{Type: session.TypeCompactionStart, Data: session.Compaction{ID: "k1"}},
		session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: seqs[0], End: seqs[3]}, Sources: seqs[:4], Data: session.UserMessage{Content: "Summary: the user asked for files; there is a.txt."}},
		session.Event{Type: session.TypeCompactionEnd, Data: session.Compaction{ID: "k1"}},
		session.Event{Type: "memo/note", Ignorable: true, Data: map[string]any{"note": "kept by readers without the plugin"}},
	)
	var buf []byte
	buf = session.AppendHeaderLine(buf, s.Info())
	for _, r := range s.Records() {
		buf = r.AppendLine(buf)
	}
	return buf
}

func TestGoldenLog(t *testing.T) {
	got := goldenLog(t)
	path := filepath.Join("testdata", "golden", "session.jsonl")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "run go test -update to rewrite")

	// The golden file decodes to the same bytes and the same fold.
	log, err := session.Decode(bytes.NewReader(want))
	require.NoError(t, err)
	var again []byte
	again = session.AppendHeaderLine(again, log.Info)
	for _, r := range log.Records {
		again = r.AppendLine(again)
	}
	require.Equal(t, string(want), string(again))
}

// A corrupt line's error says the line and why, without the package: the
// caller names the log ("s.jsonl: line 2: malformed line: …").
func TestCorruptErrorSaysTheLineOnce(t *testing.T) {
	_, err := session.DecodeBytes([]byte(line(header) + line("garbage") + line(l0)))
	require.ErrorIs(t, err, session.ErrMalformed)
	assert.Regexp(t, `^line 2: malformed line`, err.Error())
	assert.NotContains(t, err.Error(), "session:")
}
