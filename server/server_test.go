package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

var calc = scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "6*7"}}}}

// A turn posted to the API is queued, run by the worker, streamed, and
// leaves the session idle and its log valid.
func TestAPostedTurnRunsAndStreams(t *testing.T) {
	a := newAPI(t, composition(false, calc, scripted.Reply{Text: "42."}), server.Options{})
	a.startWorker()
	id := a.create()
	var q server.Queued
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"6 times 7?"}`, &q)
	assert.Equal(t, id, q.Session)
	assert.Equal(t, 0, q.Position)
	assert.NotEmpty(t, q.Job)

	recs := a.until(id, -1, turnEnd)
	require.NotEmpty(t, recs)
	assert.Equal(t, int64(0), recs[0].Seq())
	types := map[string]int{}
	for _, r := range recs {
		types[r.Type()]++
	}
	assert.Equal(t, 1, types[session.TypeUserMessage])
	assert.Equal(t, 1, types[session.TypeToolResult])
	assert.Equal(t, 2, types[session.TypeAssistantMessage])

	// The job is finished just after its turn ends (no record says so):
	// wait for the summary's jobs, which the worker clears.
	var sum server.Summary
	require.Eventually(t, func() bool {
		a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
		return len(sum.Jobs) == 0
	}, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, server.StatusIdle, sum.Status)
	assert.Equal(t, 1, sum.Turns)
	assert.Equal(t, len(recs), sum.Events)

	var rep server.VerifyReport
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/verify", "", &rep)
	assert.True(t, rep.OK, "%+v", rep.Violations)
	assert.Equal(t, len(recs), rep.Events)

	// Without follow, the events end at the tail; after skips.
	code, body := a.do("GET", "/v1/sessions/"+id+"/events?after=2", "")
	require.Equal(t, http.StatusOK, code)
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	require.Len(t, lines, len(recs)-3)
	first, err := session.DecodeRecord([]byte(lines[0]))
	require.NoError(t, err)
	assert.Equal(t, int64(3), first.Seq())

	var list struct{ Sessions []server.SessionInfo }
	a.json(http.StatusOK, "GET", "/v1/sessions", "", &list)
	require.Len(t, list.Sessions, 1)
	assert.Equal(t, id, list.Sessions[0].ID)
}

// Turns posted while others wait queue behind them, in order, unless
// queue=false; cancel drops what is queued.
func TestTurnsQueueInOrderAndCancelDropsThem(t *testing.T) {
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{})
	id := a.create()
	for i := range 3 {
		var q server.Queued
		a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"p`+itoa(int64(i))+`"}`, &q)
		assert.Equal(t, i, q.Position)
	}
	var e server.Error
	a.json(http.StatusConflict, "POST", "/v1/sessions/"+id+"/turns?queue=false", `{"prompt":"now"}`, &e)
	assert.Equal(t, server.CodeBusy, e.Code)
	var sum server.Summary
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
	assert.Equal(t, server.StatusRunning, sum.Status)
	require.Len(t, sum.Jobs, 3)
	assert.Equal(t, string(session.JobQueued), sum.Jobs[0].State)

	// Two run, in order; then the third is cancelled before it starts.
	var c struct{ Cancelled int }
	a.json(http.StatusOK, "POST", "/v1/sessions/"+id+"/cancel", "", &c)
	assert.Equal(t, 3, c.Cancelled)
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
	assert.Empty(t, sum.Jobs)
	assert.Equal(t, server.StatusIdle, sum.Status)

	for i := range 2 {
		a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"q`+itoa(int64(i))+`"}`, nil)
	}
	a.startWorker()
	recs := a.until(id, -1, func(r session.Record) bool { return r.Type() == session.TypeTurnEnd && r.Turn() == 2 })
	var prompts []string
	for _, r := range recs {
		if r.Type() == session.TypeUserMessage {
			m, err := session.DecodeData[session.UserMessage](r)
			require.NoError(t, err)
			prompts = append(prompts, m.Content)
		}
	}
	assert.Equal(t, []string{"q0", "q1"}, prompts)
}

// A turn that asks suspends the session: a new turn is refused until the
// call is decided through the API, which resumes the turn.
func TestApprovalsThroughTheAPI(t *testing.T) {
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{})
	a.startWorker()
	id := a.create()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"6 times 7?"}`, nil)
	recs := a.until(id, -1, suspends)
	req, err := session.DecodeData[session.ApprovalRequest](recs[len(recs)-1])
	require.NoError(t, err)

	sum := untilSuspended(t, func() (sum server.Summary) {
		a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
		return sum
	})
	require.Len(t, sum.Pending, 1)
	assert.Equal(t, req.ID, sum.Pending[0].Call)
	assert.Equal(t, "calc", sum.Pending[0].Tool)

	var e server.Error
	a.json(http.StatusConflict, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"again"}`, &e)
	assert.Equal(t, server.CodeSuspended, e.Code)
	a.json(http.StatusNotFound, "POST", "/v1/sessions/"+id+"/approvals/nope", `{"allow":true}`, &e)
	assert.Equal(t, server.CodeNotFound, e.Code)
	a.json(http.StatusBadRequest, "POST", "/v1/sessions/"+id+"/approvals/"+req.ID, `{}`, &e)
	assert.Equal(t, server.CodeBadRequest, e.Code)

	// Who decided is the caller (here the local principal of a server
	// without authentication), never what the body says.
	a.json(http.StatusBadRequest, "POST", "/v1/sessions/"+id+"/approvals/"+req.ID, `{"allow":true,"by":"ann"}`, &e)
	assert.Equal(t, server.CodeBadRequest, e.Code)
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/approvals/"+req.ID, `{"allow":true}`, nil)
	rest := a.until(id, int64(len(recs)-1), turnEnd)
	var result session.ToolResult
	var decision session.ApprovalDecision
	for _, r := range rest {
		switch r.Type() {
		case session.TypeToolResult:
			result, err = session.DecodeData[session.ToolResult](r)
			require.NoError(t, err)
		case session.TypeApprovalDecision:
			decision, err = session.DecodeData[session.ApprovalDecision](r)
			require.NoError(t, err)
		}
	}
	assert.Equal(t, server.LocalPrincipal.Name, decision.By)
	assert.Equal(t, "42", result.Content)
	end, err := session.DecodeData[session.TurnEnd](rest[len(rest)-1])
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, end.Reason)

	// Decided already: refused now, not queued.
	a.json(http.StatusConflict, "POST", "/v1/sessions/"+id+"/approvals/"+req.ID, `{"allow":false}`, &e)
	assert.Contains(t, []string{server.CodeNotPending, server.CodeDecided}, e.Code)
}

// A fork through the API inherits the parent's events up to at.
func TestForkThroughTheAPI(t *testing.T) {
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{})
	a.startWorker()
	id := a.create()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"hi"}`, nil)
	recs := a.until(id, -1, turnEnd)
	last := recs[len(recs)-1].Seq()

	var sum server.Summary
	a.json(http.StatusCreated, "POST", "/v1/sessions", `{"fork":{"session":"`+id+`","at":`+itoa(last)+`}}`, &sum)
	assert.NotEqual(t, id, sum.ID)
	require.NotNil(t, sum.Parent)
	assert.Equal(t, session.Parent{ID: id, Seq: last, Root: session.RootOf(recs[:last+1])}, *sum.Parent, "the fork binds its prefix")
	// The inherited events, then the fork's session/end-seed.
	assert.Equal(t, len(recs)+1, sum.Events)

	var e server.Error
	a.json(http.StatusNotFound, "POST", "/v1/sessions", `{"fork":{"session":"nosuch","at":0}}`, &e)
	assert.Equal(t, server.CodeNotFound, e.Code)
	a.json(http.StatusBadRequest, "POST", "/v1/sessions", `{"fork":{"session":"`+id+`"}}`, &e)
	assert.Equal(t, server.CodeBadRequest, e.Code)
}

// Every bad request gets a JSON error with its stable code.
func TestBadRequestsGetStableCodes(t *testing.T) {
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{MaxBody: 64})
	id := a.create()
	big := `{"prompt":"` + strings.Repeat("x", 100) + `"}`
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown session", "GET", "/v1/sessions/nosuch", "", 404, server.CodeNotFound},
		{"unknown session's events", "GET", "/v1/sessions/nosuch/events", "", 404, server.CodeNotFound},
		{"turn on an unknown session", "POST", "/v1/sessions/nosuch/turns", `{"prompt":"x"}`, 404, server.CodeNotFound},
		{"bad id", "GET", "/v1/sessions/a.b", "", 400, server.CodeBadRequest},
		{"malformed JSON", "POST", "/v1/sessions/" + id + "/turns", "{\n \"prompt\": x}", 400, server.CodeMalformedJSON},
		{"unknown field", "POST", "/v1/sessions/" + id + "/turns", `{"prompt":"x","model":"y"}`, 400, server.CodeMalformedJSON},
		{"wrong type", "POST", "/v1/sessions/" + id + "/turns", `{"prompt":7}`, 400, server.CodeMalformedJSON},
		{"two values", "POST", "/v1/sessions/" + id + "/turns", `{"prompt":"x"} {}`, 400, server.CodeMalformedJSON},
		{"no prompt", "POST", "/v1/sessions/" + id + "/turns", `{}`, 400, server.CodeBadRequest},
		{"no body", "POST", "/v1/sessions/" + id + "/turns", ``, 400, server.CodeBadRequest},
		{"oversized", "POST", "/v1/sessions/" + id + "/turns", big, 413, server.CodeTooLarge},
		{"bad after", "GET", "/v1/sessions/" + id + "/events?after=x", "", 400, server.CodeBadCursor},
		{"bad follow", "GET", "/v1/sessions/" + id + "/events?follow=maybe", "", 400, server.CodeBadRequest},
		{"follow spelled as Go would take it", "GET", "/v1/sessions/" + id + "/events?follow=1", "", 400, server.CodeBadRequest},
		{"unknown route", "GET", "/v2/nothing", "", 404, server.CodeNotFound},
		{"wrong method", "PUT", "/v1/sessions/" + id, "", 405, server.CodeMethodNotAllowed},
		{"GET a POST route", "GET", "/v1/sessions/" + id + "/turns", "", 405, server.CodeMethodNotAllowed},
		{"decide an unknown call", "POST", "/v1/sessions/" + id + "/approvals/c1", `{"allow":true}`, 404, server.CodeNotFound},
		{"cancel unknown", "POST", "/v1/sessions/nosuch/cancel", "", 404, server.CodeNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := a.do(c.method, c.path, c.body)
			assert.Equal(t, c.status, status, "%s", body)
			var e server.Error
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			assert.Equal(t, c.code, e.Code, "%s", body)
			assert.NotEmpty(t, e.Message)
		})
	}
	// A syntax error says where.
	_, body := a.do("POST", "/v1/sessions/"+id+"/turns", "{\n \"prompt\": x}")
	var e server.Error
	require.NoError(t, json.Unmarshal(body, &e))
	require.NotNil(t, e.Position, "%s", body)
	assert.Equal(t, 2, e.Position.Line)
	assert.Equal(t, 12, e.Position.Column)
	// Nothing bad was queued.
	var sum server.Summary
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
	assert.Empty(t, sum.Jobs)
}

// With tokens, every request but health and the API description needs
// one.
func TestTokensAreRequired(t *testing.T) {
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{Tokens: []string{"s3cret", " other "}})
	status, body := a.do("GET", "/v1/sessions", "")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, string(body), server.CodeUnauthorized)
	status, _ = a.do("GET", "/v1/sessions", "", "Authorization", "Bearer wrong")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = a.do("GET", "/v1/sessions", "", "Authorization", "s3cret")
	assert.Equal(t, http.StatusUnauthorized, status)
	for _, tok := range []string{"s3cret", "other"} {
		status, body = a.do("GET", "/v1/sessions", "", "Authorization", "Bearer "+tok)
		assert.Equal(t, http.StatusOK, status, "%s", body)
	}
	for _, open := range []string{"/healthz", "/openapi.json"} {
		status, _ = a.do("GET", open, "")
		assert.Equal(t, http.StatusOK, status, open)
	}
	status, _ = a.do("GET", "/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, status)
}

func TestCORSOnlyForTheNamedOrigins(t *testing.T) {
	for _, c := range []struct {
		name    string
		origins []string
		origin  string
		allowed bool
	}{
		{"off by default", nil, "https://app.example", false},
		{"named origin", []string{"https://app.example"}, "https://app.example", true},
		{"other origin", []string{"https://app.example"}, "https://evil.example", false},
		{"any", []string{"*"}, "https://evil.example", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{CORSOrigins: c.origins})
			req, err := http.NewRequest("OPTIONS", a.srv.URL+"/v1/sessions", nil)
			require.NoError(t, err)
			req.Header.Set("Origin", c.origin)
			req.Header.Set("Access-Control-Request-Method", "POST")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			if c.allowed {
				assert.Equal(t, http.StatusNoContent, resp.StatusCode)
				assert.Equal(t, c.origin, resp.Header.Get("Access-Control-Allow-Origin"))
				assert.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "Last-Event-ID")
			} else {
				assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
			}
		})
	}
}

func TestMetricsAreServedInThePrometheusFormat(t *testing.T) {
	m, err := server.NewMetrics()
	require.NoError(t, err)
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{Metrics: m})
	id := a.create()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"hi"}`, nil)
	status, body := a.do("GET", "/metrics", "")
	require.Equal(t, http.StatusOK, status)
	text := string(body)
	assert.Contains(t, text, "# TYPE http_server_request_duration_seconds histogram")
	assert.Contains(t, text, `http_route="POST /v1/sessions/{id}/turns"`)
	assert.Regexp(t, `vigil_jobs_enqueued(_job)?_total\{[^}]*vigil_job_kind="turn"[^}]*\} 1`, text)
}

func TestCheckBindRefusesAnOpenAddressWithoutTokens(t *testing.T) {
	tokens, err := server.NewTokens("", "ann default admin "+strings.Repeat("t", server.MinTokenLength))
	require.NoError(t, err)
	for _, c := range []struct {
		addr string
		auth server.Authenticator
		ok   bool
	}{
		{"127.0.0.1:8080", nil, true},
		{"[::1]:8080", nil, true},
		{"localhost:0", nil, true},
		{":8080", nil, false},
		{"0.0.0.0:8080", nil, false},
		{"10.0.0.7:8080", nil, false},
		{"example.com:8080", nil, false},
		{"0.0.0.0:8080", tokens, true},
	} {
		err := server.CheckBind(c.addr, c.auth)
		if c.ok {
			assert.NoError(t, err, c.addr)
		} else {
			assert.ErrorIs(t, err, server.ErrOpenBind, c.addr)
		}
	}
}

// untilSuspended asks for a session's summary (get) until its status is
// suspended. The worker finishes a job after its turn suspended, so the
// status can lag the log, whose last event may be there already: no new
// event is awaited, as none may come.
func untilSuspended(t *testing.T, get func() server.Summary) server.Summary {
	t.Helper()
	var sum server.Summary
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if sum = get(); sum.Status == server.StatusSuspended {
			break
		}
	}
	require.Equal(t, server.StatusSuspended, sum.Status)
	return sum
}
