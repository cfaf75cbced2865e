package mcpserve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/agentsrv/mcpserve"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// Each agent is a tool: the entry point under its entry id with a task,
// a sub-agent under its as_tool name and parameters; both take the
// session argument.
func TestToolsAreTheAgents(t *testing.T) {
	rt := openRuntime(t, composition([]scripted.Reply{{Text: "ok"}}, func() config.Entry {
		e := vigil.Plugin("agent", agentloop.Config{Delegation: agentloop.Delegation{AsTool: &agentloop.AsTool{Name: "summarize", Description: "Summarizes a text.",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}}}}})
		e.ID = "summarizer"
		return e
	}()))
	c := connect(t, rt, "", nil)
	list, err := c.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, 2)
	byName := map[string]*mcp.Tool{}
	for _, tl := range list.Tools {
		byName[tl.Name] = tl
	}
	require.Contains(t, byName, "agent")
	require.Contains(t, byName, "summarize")
	assert.Equal(t, "Summarizes a text.", byName["summarize"].Description)
	schema, err := json.Marshal(byName["summarize"].InputSchema)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","required":["text"],"properties":{"text":{"type":"string"},"session":{"type":"string","description":"The id of a session to continue: the session of an earlier answer's receipt (_meta vigil/receipt). Leave it out to start a new session."}}}`, string(schema))
	schema, err = json.Marshal(byName["agent"].InputSchema)
	require.NoError(t, err)
	assert.Contains(t, string(schema), `"task"`)
	assert.Contains(t, string(schema), `"session"`)
}

// A call runs a turn in a new session, streams its chunks as progress
// and answers with the reply and its receipt; a call naming the session
// continues it.
func TestCallRunsATurnWithProgressAndReceipt(t *testing.T) {
	rt := openRuntime(t, composition([]scripted.Reply{{Text: "Hello there, friend."}}))
	c := connect(t, rt, "", nil)
	ctx := context.Background()
	res := c.call(t, ctx, "agent", map[string]any{"task": "Say hello."})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, "Hello there, friend.", text(res))
	r := receipt(t, res)
	require.NotEmpty(t, r.Session)
	assert.Equal(t, 1, r.Turn)
	assert.Regexp(t, "^[0-9a-f]{64}$", r.RequestDigest)
	log, err := rt.Session(ctx, r.Session)
	require.NoError(t, err)
	require.Less(t, r.Seq, int64(len(log.Records)))
	assert.Equal(t, session.TypeTurnEnd, log.Records[r.Seq].Type(), "the receipt stands at the turn's end")
	assert.Equal(t, lastDigest(t, log.Records), r.RequestDigest)
	assert.Equal(t, "tester", log.Info.By)
	// The server notifies each chunk before it answers, but the client
	// hands notifications to its handler apart from the answer, so the
	// last may be handled a moment after the call returned.
	assert.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return strings.Join(c.progress, "") == "Hello there, friend."
	}, 10*time.Second, 5*time.Millisecond, "the chunks came as progress")
	c.mu.Lock()
	for _, s := range c.sessions {
		assert.Equal(t, r.Session, s, "each progress notification names the session")
	}
	c.mu.Unlock()

	again := c.call(t, ctx, "agent", map[string]any{"task": "Again.", "session": r.Session})
	require.False(t, again.IsError, text(again))
	r2 := receipt(t, again)
	assert.Equal(t, r.Session, r2.Session)
	assert.Equal(t, 2, r2.Turn)
	assert.Greater(t, r2.Seq, r.Seq)

	bad := c.call(t, ctx, "agent", map[string]any{"task": "x", "session": "nope"})
	assert.True(t, bad.IsError)
	assert.Contains(t, text(bad), "nope")
	none := c.call(t, ctx, "agent", map[string]any{})
	assert.True(t, none.IsError)
	assert.Contains(t, text(none), "task")
}

func lastDigest(t *testing.T, records []session.Record) string {
	t.Helper()
	var sha string
	for _, rec := range records {
		if rec.Type() == session.TypeRequestDigest {
			d, err := session.DecodeData[session.Digest](rec)
			require.NoError(t, err)
			sha = d.SHA256
		}
	}
	return sha
}

// A call whose turn waits for an approval asks the client, by the multi
// round-trip on the latest protocol and by an elicitation request on an
// older one; the answer is logged as the caller's decision and the turn
// goes on to its answer.
func TestApprovalIsAskedOfTheClient(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("protocol "+version, func(t *testing.T) {
			rt := openRuntime(t, composition([]scripted.Reply{askCalc, {Text: "42."}}))
			var asked []string
			c := connect(t, rt, version, func(req *mcp.ElicitRequest) *mcp.ElicitResult {
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}
			})
			res := c.call(t, context.Background(), "agent", map[string]any{"task": "What is 6*7?"})
			require.False(t, res.IsError, text(res))
			assert.Equal(t, "42.", text(res))
			require.Len(t, asked, 1)
			assert.Contains(t, asked[0], "calc")
			r := receipt(t, res)
			log, err := rt.Session(context.Background(), r.Session)
			require.NoError(t, err)
			assert.Equal(t, []string{"tester"}, decidedBy(t, log.Records))
			assert.Equal(t, session.TypeTurnEnd, log.Records[r.Seq].Type())
		})
	}
}

// A declined question denies the call; the model is told and answers.
func TestDeclinedApprovalDenies(t *testing.T) {
	rt := openRuntime(t, composition([]scripted.Reply{askCalc, {Text: "Denied, then."}}))
	c := connect(t, rt, "2025-11-25", func(*mcp.ElicitRequest) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} })
	res := c.call(t, context.Background(), "agent", map[string]any{"task": "What is 6*7?"})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, "Denied, then.", text(res))
}

// A client that cannot answer an elicitation is told which session and
// calls wait; a decision through the runtime (the API's path) resumes
// the turn.
func TestWaitingWithoutElicitation(t *testing.T) {
	rt := openRuntime(t, composition([]scripted.Reply{askCalc, {Text: "42."}}))
	c := connect(t, rt, "", nil)
	ctx := context.Background()
	res := c.call(t, ctx, "agent", map[string]any{"task": "What is 6*7?"})
	require.False(t, res.IsError, text(res))
	raw, err := json.Marshal(res.Meta[mcpserve.WaitingKey])
	require.NoError(t, err)
	var w mcpserve.Waiting
	require.NoError(t, json.Unmarshal(raw, &w))
	r := receipt(t, res)
	assert.Equal(t, r.Session, w.Session)
	require.Len(t, w.Calls, 1)
	assert.Equal(t, "calc", w.Calls[0].Tool)
	assert.Contains(t, text(res), w.Calls[0].Call)
	p, err := rt.Pending(ctx, w.Session)
	require.NoError(t, err)
	require.NotNil(t, p, "the session waits")
	out, err := rt.Decide(ctx, vigil.DecideOptions{Session: w.Session, Call: w.Calls[0].Call, Decision: vigil.Decision{Allow: true, By: "reviewer"}})
	require.NoError(t, err)
	assert.Equal(t, "42.", out.Content)
}

// Cancelling a call cancels its turn: the log ends it aborted.
func TestCancelAbortsTheTurn(t *testing.T) {
	rt := openRuntime(t, composition([]scripted.Reply{waitCall, {Text: "done"}}))
	c := connect(t, rt, "", nil)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "agent", Arguments: map[string]any{"task": "Wait."}})
		errs <- err
	}()
	select {
	case <-theBlocker.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the tool never ran")
	}
	cancel()
	require.Error(t, <-errs)
	require.Eventually(t, func() bool {
		list, err := rt.Sessions(context.Background())
		if err != nil || len(list) != 1 {
			return false
		}
		log, err := rt.Session(context.Background(), list[0].ID)
		if err != nil {
			return false
		}
		last := log.Records[len(log.Records)-1]
		for i := len(log.Records) - 1; i >= 0; i-- {
			if log.Records[i].Type() == session.TypeTurnEnd {
				last = log.Records[i]
				break
			}
		}
		if last.Type() != session.TypeTurnEnd {
			return false
		}
		end, err := session.DecodeData[session.TurnEnd](last)
		return err == nil && end.Reason == session.ReasonAborted
	}, 20*time.Second, 20*time.Millisecond)
}
