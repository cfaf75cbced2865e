package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// suspend posts a turn on a new session and waits until the worker has
// finished its job with the session suspended; it returns the session,
// the turn's job and the pending call.
func (a *api) suspend() (id, job, call string) {
	a.t.Helper()
	id = a.create()
	var q server.Queued
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"6 times 7?"}`, &q)
	a.until(id, -1, suspends)
	var sum server.Summary
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
		if sum.Status == server.StatusSuspended {
			require.Len(a.t, sum.Pending, 1)
			return id, q.Job, sum.Pending[0].Call
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.t.Fatalf("session %s did not settle suspended: %+v", id, sum)
	return
}

// job waits for job id to reach state and returns it.
func (a *api) job(id, state string) server.Job {
	a.t.Helper()
	var j server.Job
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		a.json(http.StatusOK, "GET", "/v1/jobs/"+id, "", &j)
		if j.State == state {
			return j
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.t.Fatalf("job %s did not reach %s: %+v", id, state, j)
	return j
}

// decisions returns the approval/decision records of session id.
func (a *api) decisions(id string) []session.ApprovalDecision {
	return dataOf[session.ApprovalDecision](a, id, session.TypeApprovalDecision)
}

// dataOf returns the data of session id's records of type typ.
func dataOf[T any](a *api, id, typ string) []T {
	a.t.Helper()
	log, err := a.rt.Session(a.t.Context(), id)
	require.NoError(a.t, err)
	var out []T
	for _, r := range log.Records {
		if r.Type() == typ {
			d, err := session.DecodeData[T](r)
			require.NoError(a.t, err)
			out = append(out, d)
		}
	}
	return out
}

// Reviewers deciding one call at once: exactly one is accepted, every
// other is told 409 decided, and the log records one decision.
func TestReviewersRacingOnOneCallGetOneDecision(t *testing.T) {
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{})
	a.startWorker()
	id, _, call := a.suspend()
	a.stopWorker() // the decisions wait in the queue, as they race

	const reviewers = 16
	var wg sync.WaitGroup
	statuses := make([]int, reviewers)
	codes := make([]string, reviewers)
	start := make(chan struct{})
	for i := range reviewers {
		wg.Go(func() {
			<-start
			body := `{"allow":true}`
			if i%2 == 1 {
				body = `{"allow":false,"reason":"no"}`
			}
			status, data := a.do("POST", "/v1/sessions/"+id+"/approvals/"+call, body)
			statuses[i] = status
			if status != http.StatusAccepted {
				var e server.Error
				assert.NoError(t, json.Unmarshal(data, &e), "%s", data)
				codes[i] = e.Code
				if e.Code == server.CodeDecided {
					assert.Contains(t, e.Message, call, "the API's words name the call")
					assert.NotContains(t, e.Message, "memory:", "not the store's")
				}
			}
		})
	}
	close(start)
	wg.Wait()
	accepted := 0
	for i, s := range statuses {
		if s == http.StatusAccepted {
			accepted++
			continue
		}
		assert.Equal(t, http.StatusConflict, s)
		assert.Equal(t, server.CodeDecided, codes[i])
	}
	assert.Equal(t, 1, accepted, "statuses %v", statuses)

	a.startWorker()
	a.until(id, -1, turnEnd)
	assert.Len(t, a.decisions(id), 1)
	// Decided now: a late reviewer is told so too.
	var e server.Error
	a.json(http.StatusConflict, "POST", "/v1/sessions/"+id+"/approvals/"+call, `{"allow":true}`, &e)
	assert.Contains(t, []string{server.CodeDecided, server.CodeNotPending}, e.Code)
}

// A scope no decision may have is refused at the API, by the check the
// worker makes, and nothing is queued.
func TestABadScopeIsRefusedAtTheAPI(t *testing.T) {
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{})
	a.startWorker()
	id, _, call := a.suspend()
	for _, body := range []string{`{"allow":true,"scope":"forever"}`, `{"allow":false,"scope":"session"}`} {
		var e server.Error
		a.json(http.StatusBadRequest, "POST", "/v1/sessions/"+id+"/approvals/"+call, body, &e)
		assert.Equal(t, server.CodeInvalidDecision, e.Code, body)
	}
	var sum server.Summary
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
	assert.Empty(t, sum.Jobs, "nothing queued")
	assert.Equal(t, server.StatusSuspended, sum.Status)
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/approvals/"+call, `{"allow":true,"scope":"session"}`, nil)
	a.until(id, -1, turnEnd)
}

// A job's state and outcome can be read while it waits, and after it
// ended: a turn that suspended is done with reason suspended, a decision
// done, a dropped job cancelled.
func TestJobsTellTheirOutcome(t *testing.T) {
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{})
	a.startWorker()
	id, turn, call := a.suspend()
	j := a.job(turn, "done")
	assert.Equal(t, id, j.Session)
	assert.Equal(t, "turn", j.Kind)
	assert.Equal(t, "suspended", j.Reason)
	assert.Nil(t, j.Error)
	require.NotNil(t, j.Started)
	require.NotNil(t, j.Finished)
	assert.False(t, j.Finished.Before(*j.Started))
	assert.Equal(t, "test", j.Worker)

	var q server.Queued
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/approvals/"+call, `{"allow":true}`, &q)
	j = a.job(q.Job, "done")
	assert.Equal(t, "decide", j.Kind)
	assert.Equal(t, call, j.Call)
	ds := a.decisions(id)
	require.Len(t, ds, 1)
	assert.Equal(t, ds[0].By, j.By, "the decider")
	assert.NotEmpty(t, j.By)
	assert.Equal(t, session.ReasonCompleted, j.Reason, "the decision resumed the turn, which completed")

	a.stopWorker()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"again"}`, &q)
	assert.Equal(t, "queued", a.job(q.Job, "queued").State)
	a.json(http.StatusOK, "POST", "/v1/sessions/"+id+"/cancel", "", nil)
	a.job(q.Job, "cancelled")

	var e server.Error
	a.json(http.StatusNotFound, "GET", "/v1/jobs/0000000000099999", "", &e)
	assert.Equal(t, server.CodeNotFound, e.Code)
	a.json(http.StatusNotFound, "GET", "/v1/jobs/nope", "", &e)
	assert.Equal(t, server.CodeNotFound, e.Code)
}

// The inbox lists every pending call with its whole arguments, and
// ?status= lists the sessions waiting for one.
func TestTheInboxListsPendingCallsWhole(t *testing.T) {
	long := strings.Repeat("1+", 5000) + "1"
	ask := scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": long}}}}
	a := newAPI(t, composition(true, ask, scripted.Reply{Text: "done."}), server.Options{})
	a.startWorker()
	idle := a.create()
	id, _, call := a.suspend()

	var inbox struct {
		Approvals []server.Approval `json:"approvals"`
	}
	a.json(http.StatusOK, "GET", "/v1/approvals", "", &inbox)
	require.Len(t, inbox.Approvals, 1)
	got := inbox.Approvals[0]
	assert.Equal(t, id, got.Session)
	assert.Equal(t, call, got.Call)
	assert.Equal(t, "calc", got.Tool)
	assert.JSONEq(t, `{"expression":"`+long+`"}`, got.Arguments, "never cut")
	assert.Equal(t, "arithmetic needs a yes", got.Reason)
	assert.WithinDuration(t, time.Now(), got.Requested, time.Minute)
	assert.Nil(t, got.Parent)

	var list struct {
		Sessions []server.SessionInfo `json:"sessions"`
	}
	for status, want := range map[string][]string{"suspended": {id}, "idle": {idle}, "running": nil} {
		a.json(http.StatusOK, "GET", "/v1/sessions?status="+status, "", &list)
		var ids []string
		for _, s := range list.Sessions {
			ids = append(ids, s.ID)
		}
		assert.Equal(t, want, ids, status)
	}
	var e server.Error
	a.json(http.StatusBadRequest, "GET", "/v1/sessions?status=asleep", "", &e)
	assert.Equal(t, server.CodeBadRequest, e.Code)

	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/approvals/"+call, `{"allow":false}`, nil)
	a.until(id, -1, turnEnd)
	a.json(http.StatusOK, "GET", "/v1/approvals", "", &inbox)
	assert.Empty(t, inbox.Approvals, "decided: out of the inbox")
}

// Cancelling a suspended turn denies its pending calls with reason
// cancelled, logged as decisions, and ends the turn aborted.
func TestCancelAbandonsASuspendedTurn(t *testing.T) {
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{})
	a.startWorker()
	id, _, call := a.suspend()
	a.stopWorker() // the abandon waits in the queue
	var c server.Cancelled
	a.json(http.StatusOK, "POST", "/v1/sessions/"+id+"/cancel", "", &c)
	assert.Equal(t, []string{call}, c.Denied)
	require.NotEmpty(t, c.Job)
	var e server.Error
	a.json(http.StatusConflict, "POST", "/v1/sessions/"+id+"/approvals/"+call, `{"allow":true}`, &e)
	assert.Equal(t, server.CodeDecided, e.Code, "the abandon decides every waiting call")
	a.startWorker()
	recs := a.until(id, -1, turnEnd)
	end, err := session.DecodeData[session.TurnEnd](recs[len(recs)-1])
	require.NoError(t, err)
	assert.Equal(t, session.ReasonAborted, end.Reason)
	ds := a.decisions(id)
	require.Len(t, ds, 1)
	assert.Equal(t, call, ds[0].ID)
	assert.False(t, ds[0].Allow)
	assert.Equal(t, "cancelled", ds[0].Reason)
	assert.Equal(t, server.LocalPrincipal.Name, ds[0].By)
	j := a.job(c.Job, "done")
	assert.Equal(t, session.ReasonAborted, j.Reason)

	var sum server.Summary
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
	assert.Equal(t, server.StatusIdle, sum.Status)
	a.json(http.StatusOK, "POST", "/v1/sessions/"+id+"/cancel", "", &c)
	assert.Empty(t, c.Denied, "nothing left to abandon")
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"again"}`, nil)
}

// A sub-agent's child session waiting for a decision is in the inbox,
// naming the parent session and the call of it the child serves; the
// parent's own call to the sub-agent is there too.
func TestTheInboxNamesTheParentOfASubagentsCall(t *testing.T) {
	research := scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "research", Arguments: map[string]any{"task": "add"}}}}
	src := vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{research, calc, {Text: "2"}, {Text: "the answer is 2"}}}),
		vigil.Plugin("tools/calc", nil),
		vigil.Plugin("approvals", approvals.Config{Rules: []approvals.Rule{{Tool: "calc", Action: "ask", Reason: "arithmetic needs a yes"}}}),
		config.Entry{ID: "researcher", Name: "agent", Config: agentloop.Config{System: "You research.", Delegation: agentloop.Delegation{Tools: agentloop.Refs("calc"), AsTool: &agentloop.AsTool{Name: "research"}}}},
		config.Entry{ID: "planner", Name: "agent", Config: agentloop.Config{System: "You plan.", Delegation: agentloop.Delegation{Tools: agentloop.Refs("research")}}},
	)
	a := newAPI(t, src, server.Options{})
	a.startWorker()
	id := a.create()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"plan"}`, nil)
	var inbox struct {
		Approvals []server.Approval `json:"approvals"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(inbox.Approvals) < 2 && time.Now().Before(deadline) {
		a.json(http.StatusOK, "GET", "/v1/approvals", "", &inbox)
		time.Sleep(10 * time.Millisecond)
	}
	require.Len(t, inbox.Approvals, 2, "%+v", inbox.Approvals)
	var parent, child *server.Approval
	for i, ap := range inbox.Approvals {
		if ap.Session == id {
			parent = &inbox.Approvals[i]
		} else {
			child = &inbox.Approvals[i]
		}
	}
	require.NotNil(t, parent)
	require.NotNil(t, child)
	assert.Equal(t, "research", parent.Tool)
	assert.Nil(t, parent.Parent)
	assert.Equal(t, "calc", child.Tool)
	assert.JSONEq(t, `{"expression":"6*7"}`, child.Arguments)
	require.NotNil(t, child.Parent, "the child names what it serves")
	assert.Equal(t, server.ApprovalParent{ID: id, Call: parent.Call}, *child.Parent)

	// Decided through the API, the child resumes with its own agent (the
	// researcher), then the parent with its own.
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+child.Session+"/approvals/"+child.Call, `{"allow":true}`, nil)
	a.until(child.Session, -1, turnEnd)
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/approvals/"+parent.Call, `{"allow":true}`, nil)
	recs := a.until(id, -1, turnEnd)
	end, err := session.DecodeData[session.TurnEnd](recs[len(recs)-1])
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, end.Reason)
	clog, err := a.rt.Session(t.Context(), child.Session)
	require.NoError(t, err)
	for _, r := range clog.Records {
		if r.Type() == session.TypeRequestHeader {
			assert.Contains(t, string(r.Data()), `"system":"You research."`, "seq %d", r.Seq())
		}
	}
}

// A decision is checked against the end of the log, where a pending call
// is; a call of an earlier turn is still told what became of it (409
// decided), never 404, and an unknown call is 404.
func TestADecisionOnAnEarlierTurnsCallIsDecided(t *testing.T) {
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{})
	a.startWorker()
	id, _, call := a.suspend()
	var q server.Queued
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/approvals/"+call, `{"allow":true}`, &q)
	a.job(q.Job, "done")
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"and now?"}`, &q)
	a.job(q.Job, "done") // the second turn suspends on its own call
	var sum server.Summary
	a.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", &sum)
	require.Equal(t, server.StatusSuspended, sum.Status)
	require.Len(t, sum.Pending, 1)
	require.NotEqual(t, call, sum.Pending[0].Call, "the second turn's call")

	var e server.Error
	a.json(http.StatusConflict, "POST", "/v1/sessions/"+id+"/approvals/"+call, `{"allow":false}`, &e)
	assert.Contains(t, []string{server.CodeDecided, server.CodeNotPending}, e.Code, e.Message)
	a.json(http.StatusNotFound, "POST", "/v1/sessions/"+id+"/approvals/call_nosuch", `{"allow":false}`, &e)
	assert.Equal(t, server.CodeNotFound, e.Code)
}
