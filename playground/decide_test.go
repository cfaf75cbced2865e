package playground

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// verifyStored runs invariants.Verify over the session's log as stored.
func verifyStored(t *testing.T, s visited, id string) *invariants.Report {
	t.Helper()
	log, err := s.mgr.Store().Load(s.base, id)
	require.NoError(t, err)
	line := session.AppendHeaderLine(nil, log.Info)
	for _, r := range log.Records {
		line = r.AppendLine(line)
	}
	rep, err := invariants.Verify(bytes.NewReader(line))
	require.NoError(t, err)
	return rep
}

// only returns the only record of the session shown of type typ.
func only(t *testing.T, s visited, id, typ string) session.Record {
	t.Helper()
	var out []session.Record
	for _, r := range recordsOf(t, s, id) {
		if r.Type() == typ {
			out = append(out, r)
		}
	}
	require.Len(t, out, 1, typ)
	return out[0]
}

func TestTheDemoWaitsForADecisionOnItsCalcCall(t *testing.T) {
	s := newVisited(t, Options{})
	id := waitDemo(t, s)
	p := pendingCall(t, s, id)
	assert.Equal(t, "calc", p.Tool)
	assert.JSONEq(t, `{"expression":"7*24*60*60"}`, p.Arguments)
	assert.Equal(t, "approvals", p.By)
	assert.Equal(t, approvalConfig.Rules[0].Reason, p.Reason)
	assert.Nil(t, p.Decision)
	recs := recordsOf(t, s, id)
	assert.Equal(t, session.TypeApprovalRequest, recs[len(recs)-2].Type(), "the log ends with the request: the turn is suspended")
	assert.Equal(t, p.RequestSeq, recs[len(recs)-2].Seq())
	assert.Equal(t, session.TypeStepUsage, recs[len(recs)-1].Type(), "and the step's usage, for its step/end")
	assert.Equal(t, session.TypeToolCall, recs[p.Seq].Type())
	assert.Empty(t, verifyStored(t, s, id).Violations, "a suspended log verifies")
}

func TestDecisionsResumeTheDemo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		req    decideRequest
		result func(t *testing.T, res session.ToolResult)
		scope  string
	}{
		{"allow runs the call", decideRequest{Allow: true}, func(t *testing.T, res session.ToolResult) {
			assert.Nil(t, res.Error)
			assert.Equal(t, "604800", res.Content)
		}, ""},
		{"always for this session runs it too", decideRequest{Allow: true, Always: true}, func(t *testing.T, res session.ToolResult) {
			assert.Nil(t, res.Error)
			assert.Equal(t, "604800", res.Content)
		}, session.ScopeSession},
		{"deny answers the call for the model", decideRequest{Reason: "do it in your head"}, func(t *testing.T, res session.ToolResult) {
			require.NotNil(t, res.Error)
			assert.Equal(t, session.CodeApprovalDenied, res.Error.Code)
			assert.Equal(t, decisionBy+" denied this call: do it in your head", res.Error.Message)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newVisited(t, Options{})
			id := waitDemo(t, s)
			tc.req.Session, tc.req.Call = id, pendingCall(t, s, id).ID
			res := decodeBody[decideResult](t, post(t, s, "/api/decide", tc.req), http.StatusOK)
			assert.True(t, res.Resumed)
			assert.Empty(t, res.Undecided)
			require.Eventually(t, func() bool { return s.hub.playState().State == stateDone }, 10*time.Second, 5*time.Millisecond,
				"the resumed demo did not finish: %+v", s.hub.playState())

			dr := only(t, s, id, session.TypeApprovalDecision)
			assert.Equal(t, res.Seq, dr.Seq())
			d, err := session.DecodeData[session.ApprovalDecision](dr)
			require.NoError(t, err)
			assert.Equal(t, session.ApprovalDecision{ID: tc.req.Call, Allow: tc.req.Allow, By: decisionBy, Reason: tc.req.Reason, Scope: tc.scope}, d)
			res1, err := session.DecodeData[session.ToolResult](only(t, s, id, session.TypeToolResult))
			require.NoError(t, err)
			tc.result(t, res1)
			if tc.req.Allow {
				assert.Less(t, dr.Seq(), only(t, s, id, session.TypeToolStart).Seq(), "the tool starts after the decision")
			}
			last := recordsOf(t, s, id)
			end, err := session.DecodeData[session.TurnEnd](last[len(last)-1])
			require.NoError(t, err)
			assert.Equal(t, session.ReasonCompleted, end.Reason)
			assert.Empty(t, verifyStored(t, s, id).Violations)
			rep := decodeBody[replayResult](t, post(t, s, "/api/replay", sessionBody{Session: id}), http.StatusOK)
			assert.Empty(t, rep.Error, "the replay gives the recorded decision again")
			for _, st := range rep.Steps {
				assert.True(t, st.Same, "turn %d step %d", st.Turn, st.Step)
			}
		})
	}
}

func TestDecisionsThatMakeNoSenseAreRefusedAndLogNothing(t *testing.T) {
	s := newVisited(t, Options{})
	id := waitDemo(t, s)
	call := pendingCall(t, s, id).ID
	n := len(recordsOf(t, s, id))
	for _, tc := range []struct {
		name   string
		req    decideRequest
		status int
		error  string
	}{
		{"an unknown call", decideRequest{Session: id, Call: "call_nope", Allow: true}, http.StatusNotFound, "unknown tool call"},
		{"no call", decideRequest{Session: id, Allow: true}, http.StatusBadRequest, "call is required"},
		{"a denial for the rest of the session", decideRequest{Session: id, Call: call, Always: true}, http.StatusBadRequest, "invalid decision"},
		{"a session not shown", decideRequest{Session: "01NOPE", Call: call, Allow: true}, http.StatusNotFound, "no such session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeBody[map[string]string](t, post(t, s, "/api/decide", tc.req), tc.status)
			assert.Contains(t, got["error"], tc.error)
			assert.Len(t, recordsOf(t, s, id), n, "nothing logged")
			assert.Equal(t, stateWaiting, s.hub.playState().State)
		})
	}
	t.Run("a page of another site", func(t *testing.T) {
		b, err := json.Marshal(decideRequest{Session: id, Call: call, Allow: true})
		require.NoError(t, err)
		req := httptest.NewRequest(http.MethodPost, "http://localhost/api/decide", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "http://evil.example")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		got := decodeBody[map[string]string](t, rec, http.StatusForbidden)
		assert.Contains(t, got["error"], "may not act")
		assert.Len(t, recordsOf(t, s, id), n, "nothing logged")
		assert.Equal(t, stateWaiting, s.hub.playState().State)
	})

	// The first decision is taken; a second one, on the same call, is
	// refused and names the first — while the turn resumes and after.
	allow(t, s, id)
	second := decideRequest{Session: id, Call: call, Reason: "changed my mind"}
	got := decodeBody[map[string]string](t, post(t, s, "/api/decide", second), http.StatusConflict)
	assert.Contains(t, got["error"], `tool call "`+call+`" was already allowed by `+decisionBy)
	require.Eventually(t, func() bool { return s.hub.playState().State == stateDone }, 10*time.Second, 5*time.Millisecond)
	got = decodeBody[map[string]string](t, post(t, s, "/api/decide", second), http.StatusConflict)
	assert.Contains(t, got["error"], "already allowed by "+decisionBy)
	only(t, s, id, session.TypeApprovalDecision)
	assert.Empty(t, verifyStored(t, s, id).Violations)

	// A session that waits for nothing: a fork of the finished demo.
	fk := decodeBody[map[string]sessionView](t, post(t, s, "/api/fork", map[string]any{"session": id, "seq": len(recordsOf(t, s, id)) - 1}), http.StatusOK)["session"]
	got = decodeBody[map[string]string](t, post(t, s, "/api/decide", decideRequest{Session: fk.ID, Call: call, Allow: true}), http.StatusConflict)
	assert.Contains(t, got["error"], "already allowed")
}

// TestADecisionShowsAtOnceWhileThePageStepsTheDemo: a paused demo shows
// the decision at once, and the turn it resumes waits for the next step.
func TestADecisionShowsAtOnceWhileThePageStepsTheDemo(t *testing.T) {
	s := newVisited(t, Options{Delay: time.Hour})
	id := waitDemo(t, s)
	decodeBody[playState](t, post(t, s, "/api/control", map[string]string{"op": opPause}), http.StatusOK)
	assert.Equal(t, stateWaiting, s.hub.playState().State, "still waiting, now at a paused pace")
	answered := make(chan decideResult, 1)
	call := pendingCall(t, s, id).ID
	go func() {
		rec := post(t, s, "/api/decide", decideRequest{Session: id, Call: call, Allow: true})
		var res decideResult
		_ = json.Unmarshal(rec.Body.Bytes(), &res)
		answered <- res
	}()
	var res decideResult
	select {
	case res = <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the decision waited for a step of the paused demo")
	}
	require.True(t, res.Resumed)
	require.Eventually(t, func() bool { return s.hub.playState().State == statePaused }, 10*time.Second, 5*time.Millisecond)
	recs := recordsOf(t, s, id)
	assert.Equal(t, res.Seq, recs[len(recs)-1].Seq(), "the decision is shown, and the resumed turn waits")
	decodeBody[playState](t, post(t, s, "/api/control", map[string]string{"op": opStep}), http.StatusOK)
	require.Eventually(t, func() bool { return len(recordsOf(t, s, id)) == int(res.Seq)+2 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, session.TypeToolStart, recordsOf(t, s, id)[res.Seq+1].Type())
	decodeBody[playState](t, post(t, s, "/api/control", map[string]string{"op": opFinish}), http.StatusOK)
	require.Eventually(t, func() bool { return s.hub.playState().State == stateDone }, 10*time.Second, 5*time.Millisecond)
	assert.Len(t, recordsOf(t, s, id), 52)
}

func TestResetWhileTheDemoWaitsStopsIt(t *testing.T) {
	s := newVisited(t, Options{})
	id := waitDemo(t, s)
	ps := decodeBody[playState](t, post(t, s, "/api/control", map[string]string{"op": opReset}), http.StatusOK)
	assert.Equal(t, stateIdle, ps.State)
	_, ok := s.mgr.Get(id)
	assert.False(t, ok, "the waiting demo's session is closed")
	got := decodeBody[map[string]string](t, post(t, s, "/api/decide", decideRequest{Session: id, Call: "call_1_1_0", Allow: true}), http.StatusNotFound)
	assert.Contains(t, got["error"], "no such session")
	// And it starts over, waiting again.
	assert.NotEqual(t, id, finishDemo(t, s))
}
