package agentloop_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

func TestTurnWithDefaultScriptListsTheRealFolder(t *testing.T) {
	e := newEnv(t)
	_, tools := workspace(t)
	prov := script(t)
	a := agentloop.New(e.c, agentloop.Config{System: "be brief", Model: "scripted"}, agentloop.WithProvider(prov), agentloop.WithTools(tools...))
	sess := e.session()

	var streamed strings.Builder
	res, err := a.Run(context.Background(), sess, "what is in this folder?", agentloop.OnChunk(func(c agentloop.Chunk) { streamed.WriteString(c.Text) }))
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, 2, res.Steps)
	assert.Equal(t, "The folder has 3 entries (1 directory, 2 files): docs/, go.mod, main.go.", res.Content)
	assert.Contains(t, streamed.String(), "Let me look at the folder.")
	assert.Positive(t, res.Usage.Input)

	recs := sess.Records()
	want := []string{
		"turn/start", "user/message",
		"step/start", "request/header", "request/digest",
		// six words of text, then the call in two fragments
		"assistant/chunk", "assistant/chunk", "assistant/chunk", "assistant/chunk", "assistant/chunk", "assistant/chunk",
		"assistant/chunk", "assistant/chunk",
		"assistant/message", "tool/call", "tool/start", "tool/result", "step/end",
		"step/start", "request/digest",
	}
	require.GreaterOrEqual(t, len(recs), len(want))
	assert.Equal(t, want, types(recs[:len(want)]))
	assert.Equal(t, []string{"assistant/message", "step/end", "turn/end"}, types(recs[len(recs)-3:]))

	hdr := decode[session.RequestHeader](t, ofType(recs, session.TypeRequestHeader)[0])
	assert.Equal(t, session.HeaderInitial, hdr.Reason)
	assert.Equal(t, "scripted", hdr.Header.Provider)
	assert.Equal(t, "be brief", hdr.Header.System)
	assert.Equal(t, []string{"list_dir", "read_file"}, []string{hdr.Header.Tools[0].Name, hdr.Header.Tools[1].Name})

	// The first message cites its chunks, in order.
	msg := ofType(recs, session.TypeAssistantMessage)[0]
	var chunkSeqs []int64
	for _, r := range recs {
		if r.Type() == session.TypeAssistantChunk && r.Step() == 1 {
			chunkSeqs = append(chunkSeqs, r.Seq())
		}
	}
	assert.Equal(t, chunkSeqs, msg.Sources())
	am := decode[session.AssistantMessage](t, msg)
	require.Len(t, am.ToolCalls, 1)
	assert.Equal(t, session.ToolCall{ID: "call_1_1_0", Name: "list_dir", Arguments: `{"path":"."}`}, am.ToolCalls[0])

	result := ofType(recs, session.TypeToolResult)[0]
	assert.Equal(t, []int64{ofType(recs, session.TypeToolCall)[0].Seq()}, result.Sources())
	assert.Equal(t, "docs/\ngo.mod\nmain.go", decode[session.ToolResult](t, result).Content)

	ends := ofType(recs, session.TypeStepEnd)
	assert.Equal(t, session.FinishToolCalls, decode[session.StepEnd](t, ends[0]).Finish)
	assert.Equal(t, session.FinishStop, decode[session.StepEnd](t, ends[1]).Finish)
	assert.NotNil(t, decode[session.StepEnd](t, ends[1]).Usage)

	msgs := sess.Messages()
	require.Len(t, msgs, 4)
	assert.Equal(t, []string{"user", "assistant", "tool", "assistant"}, []string{msgs[0].Role, msgs[1].Role, msgs[2].Role, msgs[3].Role})
}

func TestRequestIsHeaderPlusFoldBeforeStepStart(t *testing.T) {
	e := newEnv(t)
	_, tools := workspace(t)
	rec := &recorder{}
	prov := script(t)
	var seen []*agentloop.Request
	agentloop.LLMStream.On(e.c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
		seen = append(seen, req)
		return next(ctx, req)
	})
	_ = rec
	a := agentloop.New(e.c, agentloop.Config{System: "s"}, agentloop.WithProvider(prov), agentloop.WithTools(tools...))
	sess := e.session()
	for _, p := range []string{"one", "two"} {
		_, err := a.Run(context.Background(), sess, p)
		require.NoError(t, err)
	}
	recs := sess.Records()
	digests := ofType(recs, session.TypeRequestDigest)
	require.Len(t, seen, 4)
	require.Len(t, digests, 4)
	for i, req := range seen {
		assert.True(t, req.LoopBuilt())
		assert.Equal(t, session.TypeStepStart, recs[req.StepStart].Type())
		want, err := session.DeriveMessages(recs[:req.StepStart])
		require.NoError(t, err)
		assert.Equal(t, want, req.Messages.Clone(), "request %d", i)
		h, ok := session.DeriveHeader(recs[:req.StepStart+2])
		require.True(t, ok)
		assert.True(t, session.HeaderEquals(h, req.Header))
		d := decode[session.Digest](t, digests[i])
		assert.Equal(t, session.RequestDigest(req.Header, req.Messages.Clone()), d.SHA256)
		assert.Equal(t, req.Digest(), d.SHA256)
		assert.Equal(t, req.Messages.Len(), d.Messages)
	}
	// The header is logged once: nothing changed between the steps.
	assert.Len(t, ofType(recs, session.TypeRequestHeader), 1)
}

func TestMaxStepsEndsTheTurn(t *testing.T) {
	e := newEnv(t)
	prov, err := scripted.New(scripted.Config{Repeat: true, Script: []scripted.Reply{{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "1+1"}}}}}})
	require.NoError(t, err)
	calls := 0
	tool := funcTool{name: "calc", fn: func(context.Context, json.RawMessage) (string, error) { calls++; return "2", nil }}
	a := agentloop.New(e.c, agentloop.Config{MaxSteps: 3}, agentloop.WithProvider(prov), agentloop.WithTools(tool))
	sess := e.session()
	res, err := a.Run(context.Background(), sess, "loop")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonMaxSteps, res.Reason)
	assert.Equal(t, 3, res.Steps)
	assert.Equal(t, 3, calls)
	recs := sess.Records()
	assert.Len(t, ofType(recs, session.TypeStepStart), 3)
	assert.Equal(t, session.ReasonMaxSteps, decode[session.TurnEnd](t, recs[len(recs)-1]).Reason)
}

func TestTurnsNumberOnAndSessionBusyIsRefused(t *testing.T) {
	e := newEnv(t)
	block := make(chan struct{})
	started := make(chan struct{})
	rec := &recorder{replies: []func(ctx context.Context) (agentloop.Stream, error){
		func(ctx context.Context) (agentloop.Stream, error) {
			close(started)
			<-block
			return textStream("late"), nil
		},
	}}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(rec), agentloop.WithTools())
	sess := e.session()
	done := make(chan error)
	go func() {
		_, err := a.Run(context.Background(), sess, "first")
		done <- err
	}()
	<-started
	_, err := a.Run(context.Background(), sess, "second")
	assert.ErrorIs(t, err, agentloop.ErrBusy)
	close(block)
	require.NoError(t, <-done)

	res, err := a.Run(context.Background(), sess, "third")
	require.NoError(t, err)
	assert.Equal(t, 2, res.Turn)
	assert.Equal(t, "ok", res.Content)
}

func TestPrepareRunsBeforeTurnStart(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	var got *agentloop.Prepare
	agentloop.TurnPrepare.On(e.c, func(_ context.Context, p *agentloop.Prepare) error {
		got = p
		// Outside any turn, a listener may change the log.
		_, err := p.Session.Append(context.Background(), session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "context"}})
		return err
	})
	rec := &recorder{}
	a := agentloop.New(e.c, agentloop.Config{Model: "m"}, agentloop.WithProvider(rec), agentloop.WithTools())
	_, err := a.Run(context.Background(), sess, "question")
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, a.ID(), got.Agent)
	assert.Equal(t, "m", got.Header.Model)
	assert.Implements(t, (*agentloop.Provider)(nil), got.Provider)
	assert.NotSame(t, rec, got.Provider, "the prepare event carries the wrapped provider")
	reqs := rec.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, 2, reqs[0].Messages.Len())
	assert.Equal(t, "context", reqs[0].Messages.At(0).Content)
	assert.Equal(t, session.TypeUserMessage, sess.Records()[0].Type())
}

func TestCompleteSendsADeclaredOneShotAndLogsIt(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	_, err := sess.Append(context.Background(), session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "a long story"}})
	require.NoError(t, err)
	var marked []bool
	var purposes []string
	agentloop.LLMStream.On(e.c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
		marked = append(marked, req.LoopBuilt())
		purposes = append(purposes, req.Purpose())
		return next(ctx, req)
	})
	rec := &recorder{replies: []func(context.Context) (agentloop.Stream, error){func(context.Context) (agentloop.Stream, error) {
		return func(yield func(agentloop.Chunk, error) bool) {
			_ = yield(agentloop.Chunk{Text: "a short summary"}, nil) &&
				yield(agentloop.Chunk{Usage: &session.Usage{Input: 30, Output: 4}, Finish: session.FinishStop}, nil)
		}, nil
	}}}
	hdr := session.Header{Model: "small", System: "You write summaries."}
	reply, err := agentloop.Complete(context.Background(), e.c, rec, sess,
		agentloop.OneShot{Purpose: "summary", Sources: []int64{0}, Instruction: "summarize", Header: hdr})
	require.NoError(t, err)
	assert.Equal(t, "a short summary", reply.Content)
	assert.Equal(t, session.FinishStop, reply.Finish)
	assert.Equal(t, []bool{false}, marked)
	assert.Equal(t, []string{"summary"}, purposes)

	// The provider got the projection of the sources, then the
	// instruction: nothing but the log and the record.
	msgs := []session.Message{{Role: session.RoleUser, Content: "a long story"}, {Role: session.RoleUser, Content: "summarize"}}
	reqs := rec.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, msgs, reqs[0].Messages.Clone())
	assert.Equal(t, hdr, reqs[0].Header)

	recs := sess.Records()
	require.Equal(t, []string{session.TypeUserMessage, session.TypeRequestOneshot, session.TypeRequestUsage}, types(recs))
	assert.Equal(t, []int64{0}, recs[1].Sources())
	d := decode[session.Oneshot](t, recs[1])
	assert.Equal(t, session.Oneshot{Purpose: "summary", SHA256: session.RequestDigest(hdr, msgs), Messages: 2, Instruction: "summarize", Header: &hdr}, d)
	// The log re-derives the request.
	h, derived, ok, err := session.OneshotRequest(recs, recs[1])
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, d.SHA256, session.RequestDigest(h, derived))
	// The reply's usage is logged after it, citing the request.
	assert.Equal(t, []int64{1}, recs[2].Sources())
	assert.Equal(t, session.Usage{Input: 30, Output: 4}, decode[session.Usage](t, recs[2]))
}

func TestCompleteRefusesUndeclaredOneShots(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	open := e.session()
	_, err := open.Append(context.Background(), session.Event{Type: session.TypeTurnStart, Turn: 1})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		sess *live.Session
		o    agentloop.OneShot
		want error
	}{
		{"no session", nil, agentloop.OneShot{Purpose: "title", Instruction: "a title"}, nil},
		{"no purpose", sess, agentloop.OneShot{Instruction: "a title"}, nil},
		{"no instruction", sess, agentloop.OneShot{Purpose: "title"}, nil},
		{"a source the log does not hold", sess, agentloop.OneShot{Purpose: "title", Sources: []int64{3}, Instruction: "a title"}, nil},
		{"inside an open turn", open, agentloop.OneShot{Purpose: "title", Instruction: "a title"}, agentloop.ErrOneShotInTurn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := script(t, scripted.Reply{Text: "never"})
			_, err := agentloop.Complete(context.Background(), e.c, p, tc.sess, tc.o)
			require.Error(t, err)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
			}
		})
	}
	assert.Equal(t, 0, sess.Len(), "nothing logged")
	assert.Equal(t, 1, open.Len(), "nothing logged")
}

// A one-shot made from inside a step's model call — by an llm/stream
// listener, or the provider — is refused, for any session: a step is
// answered by its own request only.
func TestCompleteRefusesOneShotsFromInsideAStep(t *testing.T) {
	e := newEnv(t)
	scratch := e.session()
	var errs []error
	agentloop.LLMStream.On(e.c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
		if req.LoopBuilt() {
			_, err := agentloop.Complete(ctx, e.c, script(t, scripted.Reply{Text: "never"}), scratch, agentloop.OneShot{Purpose: "title", Instruction: "a title"})
			errs = append(errs, err)
		}
		return next(ctx, req)
	})
	var fromProvider error
	prov := &recorder{replies: []func(context.Context) (agentloop.Stream, error){func(ctx context.Context) (agentloop.Stream, error) {
		_, fromProvider = agentloop.Complete(ctx, e.c, script(t, scripted.Reply{Text: "never"}), scratch, agentloop.OneShot{Purpose: "title", Instruction: "a title"})
		return textStream("ok"), nil
	}}}
	a := agentloop.New(e.c, agentloop.Config{Model: "m"}, agentloop.WithProvider(prov))
	t.Cleanup(func() { _ = a.Close() })
	res, err := a.Run(context.Background(), e.session(), "hello")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], agentloop.ErrOneShotInStep)
	assert.ErrorIs(t, fromProvider, agentloop.ErrOneShotInStep)
	assert.Zero(t, scratch.Len(), "nothing logged")
	assert.Len(t, prov.requests(), 1, "only the step's request reached a provider")

	// Outside the step, the same call is a one-shot like any other.
	_, err = agentloop.Complete(context.Background(), e.c, script(t, scripted.Reply{Text: "a title"}), scratch, agentloop.OneShot{Purpose: "title", Instruction: "a title"})
	require.NoError(t, err)
}
