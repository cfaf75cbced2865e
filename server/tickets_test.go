package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
)

// A stream ticket opens one event stream of the one session it was
// issued for, once, and is a bearer token for nothing else.
func TestAStreamTicketOpensOneStreamOfItsSession(t *testing.T) {
	toks, err := server.NewTokens("", "alice default viewer "+aliceTok+"; carol default admin "+carolTok)
	require.NoError(t, err)
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{Auth: toks})
	a.startWorker()
	a.auth = carolTok
	id, other := a.create(), a.create()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"hi"}`, nil)
	a.until(id, -1, turnEnd)

	a.auth = aliceTok // a viewer may ask for tickets
	ticket := func(id string) string {
		t.Helper()
		var tk server.Ticket
		a.json(http.StatusCreated, "POST", "/v1/sessions/"+id+"/events/tickets", "", &tk)
		require.NotEmpty(t, tk.Ticket)
		assert.WithinDuration(t, time.Now().Add(server.TicketTTL), tk.Expires, 2*time.Second)
		return tk.Ticket
	}
	a.auth = ""
	refused := func(method, path string, header ...string) {
		t.Helper()
		code, body := a.do(method, path, "", header...)
		assert.Equal(t, http.StatusUnauthorized, code, "%s %s: %s", method, path, body)
		var e server.Error
		require.NoError(t, json.Unmarshal(body, &e))
		assert.Equal(t, server.CodeUnauthorized, e.Code)
	}
	a.auth = aliceTok
	tk := ticket(id)
	a.auth = ""
	events := "/v1/sessions/" + id + "/events?ticket=" + url.QueryEscape(tk)
	code, body := a.do("GET", events, "")
	require.Equal(t, http.StatusOK, code, "%s", body)
	assert.Contains(t, string(body), `"type":"turn/end"`, "the stream's events, without a bearer token")
	refused("GET", events) // used

	a.auth = aliceTok
	tk = ticket(id)
	a.auth = ""
	refused("GET", "/v1/sessions/"+other+"/events?ticket="+url.QueryEscape(tk)) // another session's
	refused("GET", events)                                                      // taken by the failed try
	for _, path := range []string{"/v1/sessions", "/v1/sessions/" + id, "/v1/sessions/" + id + "/events", "/metrics", "/v1/sessions/" + id + "/verify"} {
		a.auth = aliceTok
		tk = ticket(id)
		a.auth = ""
		refused("GET", path, "Authorization", "Bearer "+tk) // not a bearer token
		if path != "/v1/sessions/"+id+"/events" {
			refused("GET", path+"?ticket="+url.QueryEscape(tk)) // only the stream takes it
		}
	}
	refused("GET", "/v1/sessions/"+id+"/events?ticket=")
	refused("GET", "/v1/sessions/"+id+"/events?ticket=nope")

	// Asking for one needs a bearer token, and a session that exists.
	refused("POST", "/v1/sessions/"+id+"/events/tickets")
	a.auth = aliceTok
	var e server.Error
	a.json(http.StatusNotFound, "POST", "/v1/sessions/nosuch/events/tickets", "", &e)
	assert.Equal(t, server.CodeNotFound, e.Code)
}
