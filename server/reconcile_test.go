package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// crashed writes a session of tenant acme whose call call_1_1_0 ran to an
// unknown outcome (its process died), and, with answered, one whose call
// returned: a known outcome.
func (a *api) crashed(answered bool) string {
	a.t.Helper()
	ctx := context.Background()
	mgr, err := a.rt.Manager()
	require.NoError(a.t, err)
	s, err := mgr.CreateOwned(ctx, "acme", "user@acme")
	require.NoError(a.t, err)
	call := session.ToolCall{ID: "call_1_1_0", Name: "refund", Arguments: `{"order":7}`}
	evs := sessiontest.CrashedCall("refund order 7", call)
	if answered {
		evs = append(evs,
			session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{7}, Data: session.ToolResult{ID: call.ID, Name: call.Name, Content: "refunded"}},
			session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 1, Data: session.StepEnd{Finish: session.FinishToolCalls}},
			session.Event{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonInterrupted}})
	}
	for _, ev := range evs {
		_, err := s.Append(ctx, ev)
		require.NoError(a.t, err)
	}
	require.NoError(a.t, s.Close(ctx))
	return s.ID()
}

// reconciles returns the tool/reconcile records of session id.
func (a *api) reconciles(id string) []session.ToolReconcile {
	return dataOf[session.ToolReconcile](a, id, session.TypeToolReconcile)
}

// An approver reconciles an unknown call: 200 with the record, by the
// caller, whatever the text; the log verifies over the API.
func TestReconcileLogsTheCallersOutcome(t *testing.T) {
	a := newAPI(t, composition(false, calc, scripted.Reply{Text: "42."}), server.Options{Auth: peopleAuth(t)})
	id := a.crashed(false)
	a.auth = tokenOf("acme-approver")
	o := servedOpenAPI(t, a)
	status, body := a.do("POST", "/v1/sessions/"+id+"/reconcile/call_1_1_0", `{"result":"refunded \u0000 \ud800 <b>"}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	o.check("POST", "/v1/sessions/{id}/reconcile/{call}", status, body)
	var got server.Reconciled
	require.NoError(t, json.Unmarshal(body, &got))
	want := session.ToolReconcile{ID: "call_1_1_0", Name: "refund", Content: "refunded \x00 \uFFFD <b>", By: "approver@acme"}
	assert.Equal(t, server.Reconciled{Session: id, Call: "call_1_1_0", Seq: got.Seq, Outcome: want}, got)
	assert.Equal(t, []session.ToolReconcile{want}, a.reconciles(id))
	var rep struct {
		OK         bool              `json:"ok"`
		Violations []json.RawMessage `json:"violations"`
	}
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/verify", "", &rep)
	assert.True(t, rep.OK, "%s", rep.Violations)

	// failed: a TOOL_ERROR with the reason.
	other := a.crashed(false)
	a.json(http.StatusOK, "POST", "/v1/sessions/"+other+"/reconcile/call_1_1_0", `{"failed":"card declined"}`, &got)
	assert.Equal(t, &session.ToolResultError{Code: session.CodeToolError, Message: "card declined"}, got.Outcome.Error)
}

// Every refusal logs nothing and says why, with its own code; another
// tenant's session is not found, a role short of approver forbidden.
func TestReconcileRefusals(t *testing.T) {
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{Auth: peopleAuth(t)})
	unknown, known := a.crashed(false), a.crashed(true)
	a.auth = tokenOf("acme-approver")
	a.json(http.StatusOK, "POST", "/v1/sessions/"+unknown+"/reconcile/call_1_1_0", `{"failed":"no"}`, nil)
	// A session of acme suspended on an approval: a turn is open.
	a.auth = tokenOf("acme-user")
	suspended := a.create()
	a.startWorker()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+suspended+"/turns", `{"prompt":"6 times 7?"}`, nil)
	recs := a.until(suspended, -1, suspends)
	req, err := session.DecodeData[session.ApprovalRequest](recs[len(recs)-1])
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var sum server.Summary
		a.json(http.StatusOK, "GET", "/v1/sessions/"+suspended, "", &sum)
		return sum.Status == server.StatusSuspended
	}, 20e9, 5e6)
	a.stopWorker()

	fresh := a.crashed(false)
	o := servedOpenAPI(t, a)
	for _, tc := range []struct {
		name, who, id, call, body string
		status                    int
		code                      string
	}{
		{"by in the body", "acme-approver", fresh, "call_1_1_0", `{"result":"x","by":"mallory"}`, 400, server.CodeBadRequest},
		{"neither", "acme-approver", fresh, "call_1_1_0", `{}`, 400, server.CodeBadRequest},
		{"both", "acme-approver", fresh, "call_1_1_0", `{"result":"x","failed":"y"}`, 400, server.CodeBadRequest},
		{"an empty reason", "acme-approver", fresh, "call_1_1_0", `{"failed":""}`, 400, server.CodeBadRequest},
		{"an unknown field", "acme-approver", fresh, "call_1_1_0", `{"result":"x","outcome":"y"}`, 400, server.CodeMalformedJSON},
		{"unknown call", "acme-approver", fresh, "call_9", `{"result":"x"}`, 404, server.CodeNotFound},
		{"unknown session", "acme-approver", "01NOSUCHSESSION0000000000X", "call_1_1_0", `{"result":"x"}`, 404, server.CodeNotFound},
		{"another tenant's", "globex-approver", fresh, "call_1_1_0", `{"result":"x"}`, 404, server.CodeNotFound},
		{"a user", "acme-user", fresh, "call_1_1_0", `{"result":"x"}`, 403, server.CodeForbidden},
		{"a viewer", "acme-viewer", fresh, "call_1_1_0", `{"result":"x"}`, 403, server.CodeForbidden},
		{"a known outcome", "acme-approver", known, "call_1_1_0", `{"result":"x"}`, 409, server.CodeOutcomeKnown},
		{"reconciled already", "acme-approver", unknown, "call_1_1_0", `{"result":"x"}`, 409, server.CodeReconciled},
		{"an open turn", "acme-approver", suspended, req.ID, `{"result":"x"}`, 409, server.CodeOpenTurn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.auth = tokenOf(tc.who)
			status, body := a.do("POST", "/v1/sessions/"+tc.id+"/reconcile/"+tc.call, tc.body)
			require.Equal(t, tc.status, status, "%s", body)
			o.check("POST", "/v1/sessions/{id}/reconcile/{call}", status, body)
			var e server.Error
			require.NoError(t, json.Unmarshal(body, &e))
			assert.Equal(t, tc.code, e.Code, e.Message)
			if tc.code == server.CodeReconciled {
				assert.Contains(t, e.Message, "approver@acme", "names who reconciled it")
			}
		})
	}
	assert.Empty(t, a.reconciles(fresh), "no refusal logged anything")
	assert.Empty(t, a.reconciles(known))
	assert.Len(t, a.reconciles(unknown), 1)
}

// Approvers racing on one call: one is answered 200, every other 409
// reconciled, and the log holds one reconcile.
func TestReconcilersRacingOnOneCallLogOne(t *testing.T) {
	a := newAPI(t, composition(false, calc), server.Options{Auth: peopleAuth(t)})
	a.auth = tokenOf("acme-approver")
	for range 3 {
		id := a.crashed(false)
		var wg sync.WaitGroup
		statuses := make([]int, 6)
		codes := make([]string, len(statuses))
		for i := range statuses {
			wg.Go(func() {
				var body []byte
				statuses[i], body = a.do("POST", "/v1/sessions/"+id+"/reconcile/call_1_1_0", `{"result":"refunded"}`)
				var e server.Error
				_ = json.Unmarshal(body, &e)
				codes[i] = e.Code
			})
		}
		wg.Wait()
		won := 0
		for i, s := range statuses {
			if s == http.StatusOK {
				won++
				continue
			}
			assert.Equal(t, http.StatusConflict, s)
			assert.Equal(t, server.CodeReconciled, codes[i])
		}
		assert.Equal(t, 1, won, "%v %v", statuses, codes)
		assert.Len(t, a.reconciles(id), 1)
	}
}
