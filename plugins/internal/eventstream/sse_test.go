package eventstream

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReaderReadsEvents(t *testing.T) {
	body := ": comment\r\nevent: message_start\r\ndata: {\"a\":\r\ndata:1}\r\n\r\n\n\nid: 7\ndata: [DONE]\n\nevent: cut\ndata: never dispatched"
	r := NewReader(io.NopCloser(strings.NewReader(body)))
	var got []Event
	for r.Next() {
		got = append(got, r.Event())
	}
	require.NoError(t, r.Err())
	assert.Equal(t, []Event{
		{Type: "message_start", Data: []byte("{\"a\":\n1}\n")},
		{Data: []byte("[DONE]\n")},
	}, got)
}

func TestReaderEndsOnALineTooLong(t *testing.T) {
	body := "data: " + strings.Repeat("x", maxLine) + "\n\n"
	r := NewReader(io.NopCloser(strings.NewReader(body)))
	assert.False(t, r.Next())
	assert.Error(t, r.Err())
}

// events reads every event of body with next/event/err.
func events(next func() bool, event func() Event, err func() error) ([]Event, bool) {
	var out []Event
	for next() {
		e := event()
		out = append(out, Event{Type: e.Type, Data: append([]byte(nil), e.Data...)})
	}
	return out, err() != nil
}

// FuzzReaderReadsAsTheSDK: whatever the body, the reader gives the events
// (and the error) the official SDK's decoder gives.
func FuzzReaderReadsAsTheSDK(f *testing.F) {
	f.Add([]byte("event: a\ndata: 1\n\n"))
	f.Add([]byte("data:x\r\ndata: y\r\n\r\n:c\n\nevent:\n\nevent: e\n\n"))
	f.Add([]byte("data\n\nretry: 1\n\n\r\n\rdata: \x00\xff\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := NewReader(io.NopCloser(bytes.NewReader(body)))
		got, gotErr := events(r.Next, r.Event, r.Err)

		res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
		d := ssestream.NewDecoder(res)
		want, wantErr := events(d.Next, func() Event { e := d.Event(); return Event{Type: e.Type, Data: e.Data} }, d.Err)

		assert.Equal(t, want, got)
		assert.Equal(t, wantErr, gotErr)
	})
}
