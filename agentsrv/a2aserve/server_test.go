package a2aserve_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/agentsrv/a2aserve"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	_ "github.com/vigil-run/vigil/plugins/store/memory" // store/memory, by name
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// blocker is a tool that runs until its context is done, announcing on
// started that it runs: a turn to cancel.
type blocker struct{ started chan struct{} }

func (b *blocker) Spec() session.ToolSpec {
	return session.ToolSpec{Name: "wait", Description: "waits", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (b *blocker) Execute(ctx context.Context, _ json.RawMessage) (string, error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return "", ctx.Err()
}

var theBlocker = &blocker{started: make(chan struct{}, 1)}

func init() {
	bus.RegisterFunc("test/a2await", "a tool that waits for its context", func(c *bus.Context, _ struct{}) error {
		_, err := agentloop.ProvideTool(c, theBlocker)
		return err
	})
}

// serveWithWorker serves src's agents at an httptest server (the API,
// without authentication) with a worker in this process.
func serveWithWorker(t *testing.T, src vigil.Source) (*vigil.Runtime, string) {
	t.Helper()
	ctx := context.Background()
	rt, err := vigil.Open(ctx, src)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	s, err := server.New(rt, server.Options{})
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	wctx, stop := context.WithCancel(ctx)
	worked := make(chan struct{})
	go func() {
		defer close(worked)
		_ = rt.Work(wctx, vigil.WorkOptions{Worker: "test", Concurrency: 2})
	}()
	t.Cleanup(func() { stop(); <-worked })
	return rt, srv.URL
}

func clientOf(t *testing.T, base, agent string) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.DefaultResolver.Resolve(context.Background(), base+"/a2a/"+agent)
	require.NoError(t, err)
	c, err := a2aclient.NewFromCard(context.Background(), card)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// Each agent has its card and endpoint: a task sent to a sub-agent's
// endpoint runs with that agent (its system prompt is the one the model
// is sent), its data part as the arguments; a task of one agent is not
// another's. tasks/cancel of a running turn aborts it: the stream ends
// canceled and the log says aborted.
func TestEachAgentRunsItsTasksAndARunningOneIsCancelled(t *testing.T) {
	summarizer := vigil.Plugin("agent", agentloop.Config{System: "Summarize.", Delegation: agentloop.Delegation{AsTool: &agentloop.AsTool{Name: "summarize",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}}}}})
	summarizer.ID = "summarizer"
	waitCall := scripted.Reply{Text: "Waiting.", ToolCalls: []scripted.ToolCall{{Name: "wait", Arguments: map[string]any{}}}}
	rt, base := serveWithWorker(t, vigil.Compose([]config.Entry{
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "Short."}, waitCall}}),
		vigil.Plugin("test/a2await", nil),
		vigil.Plugin("agent", agentloop.Config{System: "Be brief."}),
		summarizer,
	}...))
	ctx := context.Background()

	srv, err := a2aserve.New(rt, a2aserve.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"agent", "summarize"}, srv.Agents())

	sum := clientOf(t, base, "summarize")
	res, err := sum.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"text": "a long text"}})})
	require.NoError(t, err)
	task := res.(*a2a.Task)
	require.Equal(t, a2a.TaskStateCompleted, task.Status.State)
	log, err := rt.Session(ctx, task.ContextID)
	require.NoError(t, err)
	var headers, prompts []string
	for _, rec := range log.Records {
		switch rec.Type() {
		case session.TypeRequestHeader:
			headers = append(headers, string(rec.Data()))
		case session.TypeUserMessage:
			prompts = append(prompts, string(rec.Data()))
		}
	}
	require.NotEmpty(t, headers)
	assert.Contains(t, headers[0], "Summarize.", "the summarizer ran the task")
	assert.Contains(t, prompts[0], `{\"text\":\"a long text\"}`)

	main := clientOf(t, base, "agent")
	_, err = main.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	require.ErrorIs(t, err, a2a.ErrTaskNotFound, "another agent's task is not this one's")

	events := make(chan a2a.Event, 64)
	go func() {
		defer close(events)
		for ev, err := range main.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "wait"})}) {
			if err != nil {
				return
			}
			events <- ev
		}
	}()
	first := (<-events).(*a2a.Task)
	select {
	case <-theBlocker.started:
	case <-time.After(time.Minute):
		t.Fatal("the turn did not reach its tool")
	}
	got, err := main.CancelTask(ctx, &a2a.TaskIDParams{ID: first.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCanceled, got.Status.State)
	var last *a2a.TaskStatusUpdateEvent
	for ev := range events {
		if s, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			last = s
		}
	}
	require.NotNil(t, last)
	assert.True(t, last.Final)
	assert.Equal(t, a2a.TaskStateCanceled, last.Status.State, "the stream ends canceled")
	log, err = rt.Session(ctx, first.ContextID)
	require.NoError(t, err)
	end := log.Records[len(log.Records)-1]
	for i := len(log.Records) - 1; end.Type() != session.TypeTurnEnd && i > 0; i-- {
		end = log.Records[i]
	}
	assert.True(t, strings.Contains(string(end.Data()), session.ReasonAborted), "the turn ended aborted: %s", end.Data())
}
