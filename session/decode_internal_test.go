package session

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The fast path of DecodeRecord (scanEnvelope) accepts exactly the lines
// the field-by-field path accepts, with the same result: canonical lines
// of any record, and any edit of them.
func TestDecodeRecordFastPathAgreesWithFieldByField(t *testing.T) {
	made := 0
	defer func() { require.Positive(t, made) }()
	rapid.Check(t, func(t *rapid.T) {
		p := genPayload(t)
		typ := ""
		for name, k := range coreKinds {
			if k.payload == reflect.TypeOf(p) {
				typ = name
				break
			}
		}
		ev := Event{Type: typ, Data: p}
		if rapid.Bool().Draw(t, "plugin") {
			ev = Event{Type: "memo/x", Ignorable: true, Data: map[string]any{"s": genString().Draw(t, "s")}}
		}
		ev.Turn = rapid.IntRange(0, 3).Draw(t, "turn")
		ev.Step = rapid.IntRange(0, 3).Draw(t, "step")
		if k := coreKinds[ev.Type]; k != nil && !ev.Ignorable {
			// Mostly scopes that fit, so that most lines are records.
			switch k.scope {
			case scopeNone:
				ev.Turn, ev.Step = 0, 0
			case scopeOptTurn, scopeTurnOnly:
				ev.Step = 0
				if k.scope == scopeTurnOnly {
					ev.Turn++
				}
			case scopeTurn, scopeStep:
				ev.Turn++
				if k.scope == scopeStep {
					ev.Step++
				}
			}
		}
		seq := rapid.Int64Range(0, 1<<40).Draw(t, "seq")
		if rapid.Bool().Draw(t, "sources") {
			ev.Sources = []int64{0, seq / 2}
		}
		at := time.UnixMilli(rapid.Int64Range(0, 1<<45).Draw(t, "ms"))
		r, err := NewRecord(seq, at, ev)
		if err != nil {
			return // a payload without its ids: not a line anyone writes
		}
		made++
		line := r.Bytes()
		if rapid.Bool().Draw(t, "edit") {
			i := rapid.IntRange(0, len(line)-1).Draw(t, "at")
			switch rapid.IntRange(0, 2).Draw(t, "how") {
			case 0:
				line = append(line[:i:i], line[i+1:]...)
			case 1:
				line[i] = rapid.Byte().Draw(t, "b")
			case 2:
				line = append(line[:i:i], append([]byte{rapid.Byte().Draw(t, "b")}, line[i:]...)...)
			}
		}
		got, err := DecodeRecord(line)
		slow, serr := decodeRecordSlow(line)
		require.Equal(t, serr == nil, err == nil, "fast %v, slow %v: %q", err, serr, line)
		if err == nil {
			require.Equal(t, string(line), string(got.Bytes()))
			require.True(t, bytes.Equal(slow.line, got.line))
			require.Equal(t, slow.ms, got.ms)
		}
	})
}

// TestDecodeOwnedEachHandsPayloadsAtHand: each record reaches the reader
// of DecodeOwnedEach in order, as it is validated, with the payload its
// decoder read (which a loaded log then drops for the records readers
// seldom ask about, see lean): the reader decodes nothing again.
func TestDecodeOwnedEachHandsPayloadsAtHand(t *testing.T) {
	data := AppendHeaderLine(nil, Info{ID: "s1", Created: time.Unix(0, 0)})
	for _, r := range scanSamples(t) {
		data = appendAt(t, data, r)
	}
	var seen []Record
	log, err := DecodeOwnedEach(data, func(r Record) {
		assert.NotNil(t, r.payload, "%s", r)
		seen = append(seen, r)
	})
	require.NoError(t, err)
	assert.Equal(t, log.Records, seen)
	leaned := 0
	for _, r := range log.Records {
		if r.payload == nil {
			leaned++
		}
	}
	assert.NotZero(t, leaned, "the loaded log keeps the payloads readers ask for only")
}

// appendAt appends the line of r renumbered as the next record of the
// log data holds.
func appendAt(t *testing.T, data []byte, r Record) []byte {
	t.Helper()
	seq := int64(bytes.Count(data, []byte{'\n'}) - 1)
	n, err := NewRecord(seq, r.Time(), Event{Type: r.Type(), Turn: r.Turn(), Step: r.Step(), Data: r.Data()})
	require.NoError(t, err)
	return n.AppendLine(data)
}
