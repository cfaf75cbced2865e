package jsonl

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

var fuzzInfo = session.Info{ID: "s1", Created: time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)}

// FuzzLedgerRoundTrip: an entry of any call id and any bytes, written as
// Record writes it, decodes to itself, whatever torn line follows it.
func FuzzLedgerRoundTrip(f *testing.F) {
	f.Add("call_1", []byte("refund #1"), []byte(`{"key":"s1/x","val`))
	f.Add("c\x00\n\"", []byte{0xff, 0, '\n'}, []byte{})
	f.Fuzz(func(t *testing.T, call string, value, torn []byte) {
		key := session.IdempotencyKey("s1", call)
		if session.CheckLedgerKey("s1", key) != nil {
			return
		}
		file := appendLedgerLine(nil, ledgerHeader{Ledger: "s1", Created: fuzzInfo.Created})
		file = appendLedgerLine(file, ledgerEntry{Key: key, Value: value})
		whole := len(file)
		file = append(file, bytes.ReplaceAll(torn, []byte{'\n'}, nil)...)
		entries, n, err := decodeLedger(file, fuzzInfo)
		require.NoError(t, err)
		assert.EqualValues(t, whole, n)
		require.Len(t, entries, 1)
		if value == nil {
			value = []byte{}
		}
		assert.Equal(t, value, entries[key])
	})
}

// FuzzLedgerDecode: decoding any file never panics, and what it reads as
// whole lines is a prefix of the file ending at a newline.
func FuzzLedgerDecode(f *testing.F) {
	f.Add([]byte(`{"ledger":"s1","created":"2026-12-02T04:00:00Z"}` + "\n" + `{"key":"s1/c","value":"AA=="}` + "\n"))
	f.Add([]byte("{\n}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, n, err := decodeLedger(data, fuzzInfo)
		if err != nil {
			assert.ErrorIs(t, err, session.ErrCorrupt)
			return
		}
		require.LessOrEqual(t, int(n), len(data))
		if n > 0 {
			assert.Equal(t, byte('\n'), data[n-1])
		} else {
			assert.Empty(t, entries)
		}
	})
}
