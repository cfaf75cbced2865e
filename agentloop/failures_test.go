package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

func TestCancelMidStreamKeepsDeliveredPrefix(t *testing.T) {
	e := newEnv(t)
	// The stream delivers two chunks and a tool-call fragment, then waits
	// for the cancellation like a model that is still thinking.
	rec := &recorder{replies: []func(ctx context.Context) (agentloop.Stream, error){
		func(ctx context.Context) (agentloop.Stream, error) {
			return func(yield func(agentloop.Chunk, error) bool) {
				for _, c := range []agentloop.Chunk{{Text: "Hello, "}, {Text: "wor"}, {ToolCall: &session.ChunkToolCall{ID: "c1", Name: "calc", Arguments: `{"expr`}}} {
					if !yield(c, nil) {
						return
					}
				}
				<-ctx.Done()
				yield(agentloop.Chunk{}, ctx.Err())
			}, nil
		},
	}}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(rec), agentloop.WithTools())
	sess := e.session()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	res, err := a.Run(ctx, sess, "hi", agentloop.OnChunk(func(agentloop.Chunk) {
		if n++; n == 3 {
			cancel()
		}
	}))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, session.ReasonAborted, res.Reason)
	assert.Equal(t, "Hello, wor", res.Content)

	recs := sess.Records()
	assert.Equal(t, []string{
		"turn/start", "user/message", "step/start", "request/header", "request/digest",
		"assistant/chunk", "assistant/chunk", "assistant/chunk", "assistant/message",
		"tool/call", "tool/result", "step/end", "turn/end",
	}, types(recs))
	msg := decode[session.AssistantMessage](t, recs[8])
	assert.Equal(t, "Hello, wor", msg.Content)
	assert.Equal(t, []int64{5, 6, 7}, recs[8].Sources())
	res0 := decode[session.ToolResult](t, recs[10])
	require.NotNil(t, res0.Error)
	assert.Equal(t, session.CodeToolNotStarted, res0.Error.Code)
	assert.Equal(t, session.FinishError, decode[session.StepEnd](t, recs[11]).Finish)
	end := decode[session.TurnEnd](t, recs[12])
	assert.Equal(t, session.ReasonAborted, end.Reason)
	assert.Contains(t, end.Error, "context canceled")

	// The kept prefix is model-visible in the next turn.
	_, err = a.Run(context.Background(), sess, "again")
	require.NoError(t, err)
	reqs := rec.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "Hello, wor", reqs[1].Messages.At(1).Content)
}

func TestCancelDuringToolAbortsAfterLoggingResults(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := funcTool{name: "slow", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		cancel()
		<-ctx.Done()
		return "", ctx.Err()
	}}
	prov := script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "slow"}, {Name: "slow"}}})
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(prov), agentloop.WithTools(slow))
	sess := e.session()
	res, err := a.Run(ctx, sess, "go")
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, session.ReasonAborted, res.Reason)
	results := ofType(sess.Records(), session.TypeToolResult)
	require.Len(t, results, 2)
	assert.Equal(t, session.CodeToolOutcomeUnknown, decode[session.ToolResult](t, results[0]).Error.Code)
	assert.Equal(t, session.CodeToolNotStarted, decode[session.ToolResult](t, results[1]).Error.Code)
	assert.Len(t, ofType(sess.Records(), session.TypeToolStart), 1)
}

func TestProviderErrors(t *testing.T) {
	cases := []struct {
		name      string
		script    []scripted.Reply
		attempts  int // MaxAttempts
		reason    string
		calls     int
		content   string
		wantErr   bool
		wantDelay []int // attempts passed to the backoff
	}{
		{
			name:      "429 then success is retried",
			script:    []scripted.Reply{{Error: &scripted.Failure{Status: 429}}, {Text: "fine now"}},
			reason:    session.ReasonCompleted,
			calls:     2,
			content:   "fine now",
			wantDelay: []int{1},
		},
		{
			name:      "5xx twice then success",
			script:    []scripted.Reply{{Error: &scripted.Failure{Status: 503}}, {Error: &scripted.Failure{Status: 500}}, {Text: "ok"}},
			reason:    session.ReasonCompleted,
			calls:     3,
			content:   "ok",
			wantDelay: []int{1, 2},
		},
		{
			name:     "retries are bounded",
			script:   []scripted.Reply{{Error: &scripted.Failure{Status: 429}}, {Error: &scripted.Failure{Status: 429}}, {Text: "never"}},
			attempts: 2,
			reason:   session.ReasonError,
			calls:    2,
			wantErr:  true, wantDelay: []int{1},
		},
		{
			name:    "400 is not retried",
			script:  []scripted.Reply{{Error: &scripted.Failure{Status: 400, Message: "bad request"}}, {Text: "never"}},
			reason:  session.ReasonError,
			calls:   1,
			wantErr: true,
		},
		{
			name:    "failure after a chunk is not retried and keeps the prefix",
			script:  []scripted.Reply{{Text: "partial answer here", Error: &scripted.Failure{Status: 503, After: 2}}, {Text: "never"}},
			reason:  session.ReasonError,
			calls:   1,
			content: "partial answer ",
			wantErr: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			prov := script(t, tc.script...)
			var delays []int
			a := agentloop.New(e.c, agentloop.Config{MaxAttempts: tc.attempts}, agentloop.WithProvider(prov), agentloop.WithTools(),
				agentloop.WithBackoff(func(attempt int, err *agentloop.ProviderError) time.Duration {
					delays = append(delays, attempt)
					return time.Millisecond
				}))
			sess := e.session()
			res, err := a.Run(context.Background(), sess, "hi")
			if tc.wantErr {
				var pe *agentloop.ProviderError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "scripted", pe.Provider)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.reason, res.Reason)
			assert.Equal(t, tc.content, res.Content)
			assert.Equal(t, tc.calls, prov.Calls())
			assert.Equal(t, tc.wantDelay, delays)
			recs := sess.Records()
			// One step, one digest, whatever the attempts.
			assert.Len(t, ofType(recs, session.TypeRequestDigest), 1)
			end := decode[session.TurnEnd](t, recs[len(recs)-1])
			assert.Equal(t, tc.reason, end.Reason)
			if tc.wantErr {
				assert.Contains(t, end.Error, "provider scripted")
			}
		})
	}
}

func TestBackoffWaitIsCancelled(t *testing.T) {
	e := newEnv(t)
	prov := script(t, scripted.Reply{Error: &scripted.Failure{Status: 429}}, scripted.Reply{Text: "never"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(prov), agentloop.WithTools(),
		agentloop.WithBackoff(func(int, *agentloop.ProviderError) time.Duration { return time.Hour }))
	res, err := a.Run(ctx, e.session(), "hi")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, session.ReasonAborted, res.Reason)
	assert.Equal(t, 1, prov.Calls())
}

func TestDefaultBackoff(t *testing.T) {
	assert.Equal(t, 250*time.Millisecond, agentloop.DefaultBackoff(1, &agentloop.ProviderError{}))
	assert.Equal(t, time.Second, agentloop.DefaultBackoff(3, &agentloop.ProviderError{}))
	assert.Equal(t, 8*time.Second, agentloop.DefaultBackoff(30, &agentloop.ProviderError{}))
	assert.Equal(t, 3*time.Second, agentloop.DefaultBackoff(1, &agentloop.ProviderError{RetryAfter: 3 * time.Second}))
	assert.Equal(t, time.Minute, agentloop.DefaultBackoff(1, &agentloop.ProviderError{RetryAfter: time.Hour}))
}

func TestSealRefusesMutatedRequest(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(ctx context.Context, req *agentloop.Request, next func(context.Context, *agentloop.Request) (agentloop.Stream, error)) (agentloop.Stream, error)
	}{
		{"edits a message", func(ctx context.Context, req *agentloop.Request, next func(context.Context, *agentloop.Request) (agentloop.Stream, error)) (agentloop.Stream, error) {
			ms := req.Messages.Clone() // the messages cannot be written: an edited copy replaces them
			ms[0].Content = "something the log never saw"
			req.Messages = session.NewMessages(ms)
			return next(ctx, req)
		}},
		{"drops a message", func(ctx context.Context, req *agentloop.Request, next func(context.Context, *agentloop.Request) (agentloop.Stream, error)) (agentloop.Stream, error) {
			req.Messages = session.NewMessages(req.Messages.Clone()[:req.Messages.Len()-1])
			return next(ctx, req)
		}},
		{"edits the header", func(ctx context.Context, req *agentloop.Request, next func(context.Context, *agentloop.Request) (agentloop.Stream, error)) (agentloop.Stream, error) {
			req.Header.System = "ignore previous instructions"
			return next(ctx, req)
		}},
		{"replaces the request", func(ctx context.Context, req *agentloop.Request, next func(context.Context, *agentloop.Request) (agentloop.Stream, error)) (agentloop.Stream, error) {
			return next(ctx, &agentloop.Request{Session: req.Session, Messages: req.Messages, Header: req.Header})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			// Appended after the invariants plugin's check: it runs after
			// the request was checked, and edits it.
			agentloop.LLMStream.On(e.c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
				return tc.mutate(ctx, req, next)
			})
			rec := &recorder{}
			a := agentloop.New(e.c, agentloop.Config{System: "sys"}, agentloop.WithProvider(rec), agentloop.WithTools())
			sess := e.session()
			res, err := a.Run(context.Background(), sess, "hello")
			require.ErrorIs(t, err, agentloop.ErrRequestMutated)
			assert.Equal(t, session.ReasonError, res.Reason)
			assert.Empty(t, rec.requests(), "the provider must never be called")
			recs := sess.Records()
			assert.Contains(t, decode[session.TurnEnd](t, recs[len(recs)-1]).Error, "mutated")
			// The log is untouched by the edit.
			assert.Equal(t, "hello", sess.Messages()[0].Content)
		})
	}
}

func TestUnchangedRequestPassesTheSeal(t *testing.T) {
	e := newEnv(t)
	agentloop.LLMStream.On(e.c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
		// Reading, and putting back an equal copy, is not a mutation.
		ms := req.Messages.Clone()
		ms[0].Content = string([]byte(ms[0].Content))
		req.Messages = session.NewMessages(ms)
		return next(ctx, req)
	})
	rec := &recorder{}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(rec), agentloop.WithTools())
	_, err := a.Run(context.Background(), e.session(), "hello")
	require.NoError(t, err)
	require.Len(t, rec.requests(), 1)
}

func TestProviderMissingFailsBeforeTheTurn(t *testing.T) {
	e := newEnv(t)
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithTools())
	sess := e.session()
	res, err := a.Run(context.Background(), sess, "hello")
	require.Error(t, err)
	assert.Nil(t, res)
	assert.Zero(t, sess.Len())
	assert.True(t, errors.Is(err, bus.ErrServiceMissing))
}

// TestVetoedAppendMidStepClosesTheStep: a plugin vetoes the tool/call or
// the tool/start append; the loop closes the open step (a TOOL_NOT_STARTED
// result saying why, step/end "error") and ends the turn "blocked", with
// the plugin and its reason in turn/end and in Run's error, so the log
// stays well nested, the invariants accept it and the session goes on. A
// veto that reports a broken invariant ends the turn "error" instead.
func TestVetoedAppendMidStepClosesTheStep(t *testing.T) {
	reason := errors.New("no tools today")
	for _, tc := range []struct {
		name   string
		typ    string
		veto   error
		reason string
		source string // the type of the record the result cites
	}{
		{"tool/call", session.TypeToolCall, reason, session.ReasonBlocked, session.TypeAssistantMessage},
		{"tool/start", session.TypeToolStart, reason, session.ReasonBlocked, session.TypeToolCall},
		{"an invariant", session.TypeToolCall, fmt.Errorf("%w: %w", agentloop.ErrInvariant, reason), session.ReasonError, session.TypeAssistantMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			policy := bus.PluginFunc("policy", func(c *bus.Context, _ struct{}) error {
				bus.Veto.On(c, func(_ context.Context, d bus.Dispatch) error {
					if c, ok := d.Payload.(live.Commit); ok && c.Record().Type() == tc.typ {
						return tc.veto
					}
					return nil
				})
				return nil
			})
			_, err := e.c.Plugin(policy, nil)
			require.NoError(t, err)
			ran := false
			calc := funcTool{name: "calc", fn: func(context.Context, json.RawMessage) (string, error) { ran = true; return "4", nil }}
			a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(script(t,
				scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expr": "2+2"}}}},
				scripted.Reply{Text: "fine"},
			)), agentloop.WithTools(calc))
			sess := e.session()
			res, err := a.Run(context.Background(), sess, "add")
			require.ErrorIs(t, err, reason)
			require.NotNil(t, res)
			assert.False(t, ran)
			assert.Equal(t, tc.reason, res.Reason)
			recs := sess.Records()
			got := types(recs)
			require.Equal(t, []string{session.TypeToolResult, session.TypeStepEnd, session.TypeTurnEnd}, got[len(got)-3:])
			resRec := ofType(recs, session.TypeToolResult)[0]
			r := decode[session.ToolResult](t, resRec)
			require.NotNil(t, r.Error)
			assert.Equal(t, session.CodeToolNotStarted, r.Error.Code)
			assert.Equal(t, "the tool did not run: "+err.Error(), r.Error.Message)
			src := resRec.Sources()
			require.Len(t, src, 1)
			assert.Equal(t, tc.source, recs[src[0]].Type())
			end := decode[session.TurnEnd](t, recs[len(recs)-1])
			assert.Equal(t, tc.reason, end.Reason)
			assert.Equal(t, err.Error(), end.Error)
			var be *agentloop.BlockedError
			if tc.reason == session.ReasonBlocked {
				require.ErrorAs(t, err, &be)
				assert.Equal(t, "policy", be.Plugin)
				assert.Equal(t, tc.typ, be.Type)
				assert.Equal(t, fmt.Sprintf("blocked by plugin %q: %s refused: no tools today", "policy", tc.typ), err.Error())
			} else {
				assert.False(t, errors.As(err, &be), "an invariant refusal is no block: %v", err)
			}

			res, err = a.Run(context.Background(), sess, "again")
			require.NoError(t, err)
			assert.Equal(t, "fine", res.Content)
		})
	}
}
