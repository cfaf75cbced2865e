package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
)

// A cursor out of range is a 400 bad_cursor on every path of the event
// stream: never a recovered panic, never a replay from seq 0.
func TestACursorOutOfRangeIsABadCursor(t *testing.T) {
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{})
	id := a.create()
	events := "/v1/sessions/" + id + "/events"
	for _, raw := range []string{"9223372036854775807", "9223372036854775808", "-2", "-9223372036854775808", "1e3", "x"} {
		for _, path := range []struct {
			name   string
			query  string
			header []string
		}{
			{"jsonl", "?after=" + url.QueryEscape(raw), nil},
			{"jsonl follow", "?follow=true&after=" + url.QueryEscape(raw), nil},
			{"sse after", "?after=" + url.QueryEscape(raw), []string{"Accept", "text/event-stream"}},
			{"sse Last-Event-ID", "", []string{"Accept", "text/event-stream", "Last-Event-ID", raw}},
		} {
			t.Run(path.name+" "+raw, func(t *testing.T) {
				code, body := a.do("GET", events+path.query, "", path.header...)
				require.Equal(t, http.StatusBadRequest, code, "%s", body)
				var e server.Error
				require.NoError(t, json.Unmarshal(body, &e), "%s", body)
				assert.Equal(t, server.CodeBadCursor, e.Code)
			})
		}
	}
	// The largest cursor that names a seq still streams (nothing yet).
	code, body := a.do("GET", events+"?after=9223372036854775806", "")
	require.Equal(t, http.StatusOK, code, "%s", body)
	assert.Empty(t, body)
}
