package session_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// A loaded line's payload is decoded without the strict decoder, because
// the line must equal the encoding of what it decodes to: every payload
// the strict decoder refuses must still be refused, by that comparison.
func TestDecodeRecordRefusesWhatStrictnessWould(t *testing.T) {
	rec, err := session.NewRecord(3, time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC), session.Event{
		Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Text: "hi"},
	})
	require.NoError(t, err)
	good := string(rec.Bytes())
	require.Contains(t, good, `"data":{"text":"hi"}`)
	_, err = session.DecodeRecord([]byte(good))
	require.NoError(t, err)

	for name, data := range map[string]string{
		"unknown field":   `{"text":"hi","colour":1}`,
		"duplicate key":   `{"text":"ho","text":"hi"}`,
		"key in capitals": `{"Text":"hi"}`,
		"spaces":          `{"text": "hi"}`,
		"null field":      `{"text":"hi","reasoning":null}`,
	} {
		t.Run(name, func(t *testing.T) {
			line := strings.Replace(good, `{"text":"hi"}`, data, 1)
			_, err := session.DecodeRecord([]byte(line))
			require.Error(t, err, line)
		})
	}
}
