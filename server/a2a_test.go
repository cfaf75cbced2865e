package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// a2aClient resolves the card of a's agent and connects a2a-go's client
// to its endpoint with token.
func a2aClient(t *testing.T, a *api, token string) *a2aclient.Client {
	t.Helper()
	hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	card, err := agentcard.NewResolver(hc).Resolve(context.Background(), a.srv.URL+"/a2a/agent")
	require.NoError(t, err)
	c, err := a2aclient.NewFromCard(context.Background(), card, a2aclient.WithJSONRPCTransport(hc))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func a2aText(text string) *a2a.MessageSendParams {
	return &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})}
}

func a2aReceipt(t *testing.T, meta map[string]any) agentsrv.Receipt {
	t.Helper()
	raw, err := json.Marshal(meta[agentsrv.MetaKey])
	require.NoError(t, err)
	var r agentsrv.Receipt
	require.NoError(t, json.Unmarshal(raw, &r))
	return r
}

func a2aTask(t *testing.T, res a2a.SendMessageResult) *a2a.Task {
	t.Helper()
	task, ok := res.(*a2a.Task)
	require.True(t, ok, "a task, not %T", res)
	return task
}

func partsText(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		if tp, ok := p.(a2a.TextPart); ok {
			b.WriteString(tp.Text)
		}
	}
	return b.String()
}

// The card names the endpoint and says it wants a bearer token; a task
// sent is queued, run by the worker, answered completed with the turn's
// answer and receipt; a second message in its context continues the
// session; tasks/get reads it again; another tenant's task is one that
// does not exist.
func TestA2ASendIsQueuedAndAnswered(t *testing.T) {
	toks, err := server.NewTokens("", "ann acme user,approver ann-token-0123456789; eve other user eve-token-0123456789")
	require.NoError(t, err)
	a := newAPI(t, composition(false, scripted.Reply{Text: "Hello there."}), server.Options{Auth: toks})
	a.startWorker()
	ctx := context.Background()

	status, _ := a.do("POST", "/a2a/agent", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`)
	assert.Equal(t, http.StatusUnauthorized, status, "the endpoint is behind the API's gate")
	status, _ = a.do("GET", "/a2a/nobody/.well-known/agent-card.json", "")
	assert.Equal(t, http.StatusNotFound, status)

	c := a2aClient(t, a, "ann-token-0123456789")
	card, err := c.GetAgentCard(ctx)
	require.NoError(t, err)
	assert.Equal(t, a.srv.URL+"/a2a/agent", card.URL)
	assert.Contains(t, card.SecuritySchemes, a2a.SecuritySchemeName("bearer"))

	res, err := c.SendMessage(ctx, a2aText("Hi"))
	require.NoError(t, err)
	task := a2aTask(t, res)
	require.Equal(t, a2a.TaskStateCompleted, task.Status.State)
	require.Len(t, task.Artifacts, 1)
	assert.Equal(t, "Hello there.", partsText(task.Artifacts[0].Parts))
	r := a2aReceipt(t, task.Metadata)
	assert.Equal(t, task.ContextID, r.Session)
	assert.Equal(t, 1, r.Turn)
	assert.Regexp(t, "^[0-9a-f]{64}$", r.RequestDigest)
	info, err := a.rt.SessionInfo(ctx, r.Session)
	require.NoError(t, err)
	assert.Equal(t, "acme", info.Tenant)

	next := a2aText("Again")
	next.Message.ContextID = task.ContextID
	res, err = c.SendMessage(ctx, next)
	require.NoError(t, err)
	second := a2aTask(t, res)
	assert.NotEqual(t, task.ID, second.ID)
	assert.Equal(t, task.ContextID, second.ContextID)
	assert.Equal(t, 2, a2aReceipt(t, second.Metadata).Turn, "the context's session is continued")

	got, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCompleted, got.Status.State)
	assert.Equal(t, r, a2aReceipt(t, got.Metadata), "the receipt is read again from the log")

	eve := a2aClient(t, a, "eve-token-0123456789")
	_, err = eve.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	require.ErrorIs(t, err, a2a.ErrTaskNotFound, "another tenant's task does not exist")
	_, err = eve.SendMessage(ctx, next)
	require.Error(t, err, "nor its context")
	_, err = c.GetTask(ctx, &a2a.TaskQueryParams{ID: "no-such-task"})
	require.ErrorIs(t, err, a2a.ErrTaskNotFound)
}

// message/stream yields the task, the turn's chunks as appends to the
// answer, the whole answer, and a final status with the receipt.
func TestA2AStreamsTheTurn(t *testing.T) {
	a := newAPI(t, composition(false, scripted.Reply{Text: "One, two, three."}), server.Options{})
	a.startWorker()
	c := a2aClient(t, a, "")
	var states []a2a.TaskState
	var chunks strings.Builder
	var answer string
	var final *a2a.TaskStatusUpdateEvent
	for ev, err := range c.SendStreamingMessage(context.Background(), a2aText("Count")) {
		require.NoError(t, err)
		switch ev := ev.(type) {
		case *a2a.Task:
			states = append(states, ev.Status.State)
		case *a2a.TaskArtifactUpdateEvent:
			if ev.Append {
				chunks.WriteString(partsText(ev.Artifact.Parts))
			} else {
				answer = partsText(ev.Artifact.Parts)
			}
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, ev.Status.State)
			if ev.Final {
				final = ev
			}
		}
	}
	require.NotNil(t, final)
	assert.Equal(t, a2a.TaskStateCompleted, final.Status.State)
	assert.Equal(t, "One, two, three.", answer)
	assert.Equal(t, "One, two, three.", chunks.String(), "the chunks stream as they are logged")
	assert.Contains(t, []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking}, states[0])
	r := a2aReceipt(t, final.Metadata)
	assert.Equal(t, final.ContextID, r.Session)
}

// A turn that waits for an approval is input-required with the calls
// that wait; a user without the approver role may not answer; the
// approver's "allow" is queued as a decision and the task completes;
// "deny" is logged as a denial.
func TestA2AInputRequiredIsAnsweredOnTheTask(t *testing.T) {
	toks, err := server.NewTokens("", "ann acme user,approver ann-token-0123456789; bob acme user bob-token-0123456789")
	require.NoError(t, err)
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{Auth: toks})
	a.startWorker()
	ctx := context.Background()
	ann := a2aClient(t, a, "ann-token-0123456789")
	bob := a2aClient(t, a, "bob-token-0123456789")

	for _, allow := range []bool{true, false} {
		res, err := bob.SendMessage(ctx, a2aText("6*7?"))
		require.NoError(t, err)
		task := a2aTask(t, res)
		require.Equal(t, a2a.TaskStateInputRequired, task.Status.State)
		assert.Contains(t, partsText(task.Status.Message.Parts), "calc")
		r := a2aReceipt(t, task.Metadata)
		p, err := a.rt.Pending(ctx, r.Session)
		require.NoError(t, err)
		require.NotNil(t, p, "the turn waits in the store")

		answer := a2aText("allow")
		if !allow {
			answer = a2aText("deny not now")
		}
		answer.Message.TaskID = task.ID
		_, err = bob.SendMessage(ctx, answer)
		require.Error(t, err, "a user without the approver role may not decide")

		res, err = ann.SendMessage(ctx, answer)
		require.NoError(t, err)
		done := a2aTask(t, res)
		require.Equal(t, a2a.TaskStateCompleted, done.Status.State)
		assert.Equal(t, "42.", partsText(done.Artifacts[0].Parts))

		log, err := a.rt.Session(ctx, r.Session)
		require.NoError(t, err)
		var decisions []session.ApprovalDecision
		for _, rec := range log.Records {
			if rec.Type() == session.TypeApprovalDecision {
				d, err := session.DecodeData[session.ApprovalDecision](rec)
				require.NoError(t, err)
				decisions = append(decisions, d)
			}
		}
		require.Len(t, decisions, 1)
		assert.Equal(t, allow, decisions[0].Allow)
		assert.Equal(t, "ann", decisions[0].By)

		_, err = ann.SendMessage(ctx, answer)
		require.Error(t, err, "a completed task takes no more answers")
	}
}

// tasks/cancel cancels the turn: a task that waits for approval, and one
// queued behind a busy worker, end canceled.
func TestA2ACancelEndsTheTask(t *testing.T) {
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{})
	a.startWorker()
	ctx := context.Background()
	c := a2aClient(t, a, "")

	res, err := c.SendMessage(ctx, a2aText("6*7?"))
	require.NoError(t, err)
	task := a2aTask(t, res)
	require.Equal(t, a2a.TaskStateInputRequired, task.Status.State)
	got, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCanceled, got.Status.State)
	_, err = c.CancelTask(ctx, &a2a.TaskIDParams{ID: task.ID})
	require.ErrorIs(t, err, a2a.ErrTaskNotCancelable)

	a.stopWorker()
	blocking := false
	p := a2aText("later")
	p.Config = &a2a.MessageSendConfig{Blocking: &blocking}
	res, err = c.SendMessage(ctx, p)
	require.NoError(t, err)
	queued := a2aTask(t, res)
	assert.Equal(t, a2a.TaskStateSubmitted, queued.Status.State)
	got, err = c.CancelTask(ctx, &a2a.TaskIDParams{ID: queued.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCanceled, got.Status.State)
}
