package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One replay runs at a time per server: another, meanwhile, is 429 busy
// with a Retry-After, and runs nothing.
func TestASecondReplayIsBusy(t *testing.T) {
	s := &Server{replays: make(chan struct{}, 1)}
	s.replays <- struct{}{} // a replay is running
	w := httptest.NewRecorder()
	s.reply(s.handleReplay)(w, httptest.NewRequest("GET", "/v1/sessions/x/replay", nil))
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	assert.Equal(t, "5", w.Header().Get("Retry-After"))
	var e Error
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e))
	assert.Equal(t, CodeBusy, e.Code)
	assert.Len(t, s.replays, 1, "the running replay keeps its slot")
}
