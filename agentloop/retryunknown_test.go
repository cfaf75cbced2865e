package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// payments is a payment tool's side of the world: the idempotency key of
// every run, in order.
type payments struct {
	mu   sync.Mutex
	keys []string
}

// tool returns the tool "pay", which notes the key it runs with and
// then does what body says.
func (p *payments) tool(idempotent bool, body func(ctx context.Context) (string, error)) funcTool {
	return funcTool{name: "pay", idempotent: idempotent, fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		p.mu.Lock()
		p.keys = append(p.keys, agentloop.IdempotencyKey(ctx))
		p.mu.Unlock()
		return body(ctx)
	}}
}

func (p *payments) runs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.keys)
}

func paid(context.Context) (string, error) { return "paid", nil }

// crashedPay runs turn 1 of a session: the model asks for "pay", and
// while the call runs the log is taken as a process killed at that moment
// leaves it (see killedCopy). It returns the copy's directory, the
// session's id and the call's id.
func crashedPay(t *testing.T, idempotent bool, p *payments) (dir, id, callID string) {
	t.Helper()
	e := newEnv(t)
	started, release := make(chan struct{}), make(chan struct{})
	pay := p.tool(idempotent, func(context.Context) (string, error) {
		close(started)
		<-release
		return "paid, too late", nil
	})
	prov := script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "pay", Arguments: `{"amount":10}`}}}, scripted.Reply{Text: "never asked"})
	a := agentloop.New(e.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(prov), agentloop.WithTools(pay))
	sess := e.session()
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), sess, "pay 10")
		done <- err
	}()
	waitFor(t, started) // tool/start is durable before the tool runs
	dir = killedCopy(t, sess, -1)
	close(release)
	require.NoError(t, <-done)
	calls := ofType(sess.Records(), session.TypeToolCall)
	require.Len(t, calls, 1)
	return dir, sess.ID(), decode[session.ToolCall](t, calls[0]).ID
}

// waitFor waits for ch to be closed: a tool started.
func waitFor(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool was not run")
	}
}

// killedCopy writes the first n records of sess (all of them when n < 0)
// as a JSONL log in a directory of its own: what a process killed when
// they were durable leaves.
func killedCopy(t *testing.T, sess *live.Session, n int) string {
	t.Helper()
	recs := sess.Records()
	if n >= 0 {
		recs = recs[:n]
	}
	buf := session.AppendHeaderLine(nil, sess.Info())
	for _, r := range recs {
		buf = r.AppendLine(buf)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, sess.ID()+".jsonl"), buf, 0o644))
	return dir
}

// reopened is a session opened from a killed process's log, as the next
// process opens it (repair closes the turn the kill left open), on a
// JSONL store that keeps appends in memory for an hour unless flushed.
type reopened struct {
	*env
	store *jsonl.Store
	sess  *live.Session
}

func reopen(t *testing.T, dir, id string) *reopened {
	t.Helper()
	store, err := jsonl.Open(dir, jsonl.WithSyncInterval(time.Hour))
	require.NoError(t, err)
	e := newEnvWith(t, store)
	sess, err := e.mgr.Open(context.Background(), id)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = sess.Close(context.Background())
		_ = store.Close()
	})
	return &reopened{env: e, store: store, sess: sess}
}

// verify closes the session and verifies its file.
func (r *reopened) verify(t *testing.T) {
	t.Helper()
	require.NoError(t, r.sess.Close(context.Background()))
	require.NoError(t, r.store.Close())
	rep, err := invariants.VerifyFile(r.store.Path(r.sess.ID()))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
}

// unknownResult is the seq of the TOOL_OUTCOME_UNKNOWN result of call.
func unknownResult(t *testing.T, recs []session.Record, call string) int64 {
	t.Helper()
	for _, r := range ofType(recs, session.TypeToolResult) {
		if res := decode[session.ToolResult](t, r); res.ID == call {
			require.NotNil(t, res.Error)
			require.Equal(t, session.CodeToolOutcomeUnknown, res.Error.Code)
			return r.Seq()
		}
	}
	t.Fatalf("no result of %s", call)
	return -1
}

// TestContinueRetriesAnIdempotentCallWithItsKey: a call of an idempotent
// tool that a kill left unknown is run again by the continuation before
// its first step, once, with the call's idempotency key, through
// tool/execute (which says it is a retry), after its tool/retry is on
// disk; its outcome is logged as the call's tool/reconcile, and the log
// verifies.
func TestContinueRetriesAnIdempotentCallWithItsKey(t *testing.T) {
	p := &payments{}
	dir, id, callID := crashedPay(t, true, p)
	r := reopen(t, dir, id)
	ctx := context.Background()
	unknown := unknownResult(t, r.sess.Records(), callID)
	callSeq := ofType(r.sess.Records(), session.TypeToolCall)[0].Seq()
	before := r.sess.Len()

	var onDisk bool
	pay := p.tool(true, func(context.Context) (string, error) {
		b, err := os.ReadFile(r.store.Path(id))
		onDisk = err == nil && strings.Contains(string(b), `"type":"tool/retry"`)
		return "paid", nil
	})
	var invs []agentloop.ToolInvocation
	agentloop.ToolExecute.On(r.c, func(ctx context.Context, inv *agentloop.ToolInvocation, next bus.Next[*agentloop.ToolInvocation, agentloop.ToolOutput]) (agentloop.ToolOutput, error) {
		invs = append(invs, *inv)
		return next(ctx, inv)
	})
	rec := &recorder{}
	a := agentloop.New(r.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(rec), agentloop.WithTools(pay))
	res, err := a.Continue(ctx, r.sess)
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)

	key := session.IdempotencyKey(id, callID)
	assert.Equal(t, []string{key, key}, p.runs(), "run once more, with the key of the first run")
	assert.True(t, onDisk, "tool/retry is durable before the tool runs again")
	require.Len(t, invs, 1)
	assert.True(t, invs[0].Retry)
	assert.Equal(t, 2, invs[0].Turn)
	assert.Zero(t, invs[0].Step)
	assert.Equal(t, callSeq, invs[0].CallSeq)
	assert.Equal(t, key, invs[0].Key)

	recs := r.sess.Records()[before:]
	require.GreaterOrEqual(t, len(recs), 4)
	assert.Equal(t, []string{session.TypeTurnStart, session.TypeToolRetry, session.TypeToolReconcile, session.TypeStepStart}, types(recs[:4]))
	retry, reconcile := recs[1], recs[2]
	assert.Equal(t, session.ToolRetry{ID: callID}, decode[session.ToolRetry](t, retry))
	assert.Equal(t, []int64{unknown}, retry.Sources())
	assert.Equal(t, [2]int{2, 0}, [2]int{retry.Turn(), retry.Step()})
	assert.Equal(t, session.ToolReconcile{ID: callID, Name: "pay", Content: "paid"}, decode[session.ToolReconcile](t, reconcile))
	assert.Equal(t, []int64{unknown, retry.Seq()}, reconcile.Sources())
	assert.Equal(t, [2]int{2, 0}, [2]int{reconcile.Turn(), reconcile.Step()})

	reqs := rec.requests()
	require.Len(t, reqs, 1)
	msgs := reqs[0].Messages
	assert.Contains(t, msgs.At(msgs.Len()-1).Content, "paid", "the model is shown the retry's outcome")
	r.verify(t)
}

// TestContinueLeavesANonIdempotentCallUnknown: a call of a tool that did
// not declare itself idempotent is not run again; the model is told its
// outcome is unknown, as before.
func TestContinueLeavesANonIdempotentCallUnknown(t *testing.T) {
	p := &payments{}
	dir, id, _ := crashedPay(t, false, p)
	r := reopen(t, dir, id)
	rec := &recorder{}
	a := agentloop.New(r.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(rec), agentloop.WithTools(p.tool(false, paid)))
	_, err := a.Continue(context.Background(), r.sess)
	require.NoError(t, err)
	assert.Len(t, p.runs(), 1, "not run again")
	assert.Empty(t, ofType(r.sess.Records(), session.TypeToolRetry))
	assert.Empty(t, ofType(r.sess.Records(), session.TypeToolReconcile))
	msgs := rec.requests()[0].Messages
	assert.Contains(t, msgs.At(msgs.Len()-1).Content, session.CodeToolOutcomeUnknown)
	r.verify(t)
}

// TestContinueRetriesOnlyWhatWasAndIsIdempotent: a call is run again only
// when the header of its step declared its tool idempotent, the tool is
// offered now and still declares it, and nobody reconciled the call.
func TestContinueRetriesOnlyWhatWasAndIsIdempotent(t *testing.T) {
	other := funcTool{name: "refund", idempotent: true, fn: func(context.Context, json.RawMessage) (string, error) { return "refunded", nil }}
	cases := []struct {
		name        string
		wasIdem     bool
		tools       func(p *payments) []agentloop.Tool
		reconcileBy string // a person reconciled the call before the continuation
	}{
		{name: "not idempotent when it ran", wasIdem: false, tools: func(p *payments) []agentloop.Tool { return []agentloop.Tool{p.tool(true, paid)} }},
		{name: "no longer idempotent", wasIdem: true, tools: func(p *payments) []agentloop.Tool { return []agentloop.Tool{p.tool(false, paid)} }},
		{name: "no longer configured", wasIdem: true, tools: func(*payments) []agentloop.Tool { return []agentloop.Tool{other} }},
		{name: "no tools at all", wasIdem: true, tools: func(*payments) []agentloop.Tool { return nil }},
		{name: "reconciled by a person", wasIdem: true, tools: func(p *payments) []agentloop.Tool { return []agentloop.Tool{p.tool(true, paid)} }, reconcileBy: "alice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &payments{}
			dir, id, callID := crashedPay(t, tc.wasIdem, p)
			r := reopen(t, dir, id)
			ctx := context.Background()
			if tc.reconcileBy != "" {
				_, err := r.sess.Append(ctx, session.Event{Type: session.TypeToolReconcile, Sources: []int64{unknownResult(t, r.sess.Records(), callID)},
					Data: session.ToolReconcile{ID: callID, Name: "pay", Content: "the bank says paid", By: tc.reconcileBy}})
				require.NoError(t, err)
			}
			a := agentloop.New(r.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(&recorder{}), agentloop.WithTools(tc.tools(p)...))
			res, err := a.Continue(ctx, r.sess)
			require.NoError(t, err)
			assert.Equal(t, session.ReasonCompleted, res.Reason)
			assert.Len(t, p.runs(), 1, "not run again")
			assert.Empty(t, ofType(r.sess.Records(), session.TypeToolRetry))
			r.verify(t)
		})
	}
}

// TestARetryLogsTheToolsErrorAsTheOutcome: a retry whose tool now fails
// reconciles the call with the error; one whose outcome is still unknown
// (the tool says so) is not reconciled, and the turn goes on.
func TestARetryLogsTheToolsErrorAsTheOutcome(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want *session.ToolResultError // nil: not reconciled
	}{
		{"an error", errors.New("card declined"), &session.ToolResultError{Code: agentloop.CodeToolFailed, Message: "card declined"}},
		{"a coded error", &agentloop.ToolError{Code: "INSUFFICIENT_FUNDS", Message: "balance 3"}, &session.ToolResultError{Code: "INSUFFICIENT_FUNDS", Message: "balance 3"}},
		{"still unknown", &agentloop.ToolError{Code: session.CodeToolOutcomeUnknown, Message: "the bank timed out"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &payments{}
			dir, id, callID := crashedPay(t, true, p)
			r := reopen(t, dir, id)
			pay := p.tool(true, func(context.Context) (string, error) { return "", tc.err })
			a := agentloop.New(r.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(&recorder{}), agentloop.WithTools(pay))
			res, err := a.Continue(context.Background(), r.sess)
			require.NoError(t, err)
			assert.Equal(t, session.ReasonCompleted, res.Reason)
			assert.Len(t, p.runs(), 2)
			assert.Len(t, ofType(r.sess.Records(), session.TypeToolRetry), 1)
			rcs := ofType(r.sess.Records(), session.TypeToolReconcile)
			if tc.want == nil {
				assert.Empty(t, rcs)
			} else {
				require.Len(t, rcs, 1)
				assert.Equal(t, session.ToolReconcile{ID: callID, Name: "pay", Error: tc.want}, decode[session.ToolReconcile](t, rcs[0]))
			}
			r.verify(t)
		})
	}
}

// TestARetryCancelledLeavesTheCallUnknown: a continuation cancelled
// while its retry runs logs no outcome and ends aborted before any step.
func TestARetryCancelledLeavesTheCallUnknown(t *testing.T) {
	p := &payments{}
	dir, id, _ := crashedPay(t, true, p)
	r := reopen(t, dir, id)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pay := p.tool(true, func(ctx context.Context) (string, error) {
		cancel()
		<-ctx.Done()
		return "", ctx.Err()
	})
	rec := &recorder{}
	a := agentloop.New(r.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(rec), agentloop.WithTools(pay))
	res, err := a.Continue(ctx, r.sess)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, session.ReasonAborted, res.Reason)
	assert.Len(t, ofType(r.sess.Records(), session.TypeToolRetry), 1)
	assert.Empty(t, ofType(r.sess.Records(), session.TypeToolReconcile))
	assert.Empty(t, rec.requests(), "no step ran")
	assert.Len(t, ofType(r.sess.Records(), session.TypeStepStart), 1, "turn 1's only")
	r.verify(t)
}

// TestARetryCutShortIsRetriedByTheNextContinuation: a kill during the
// continuation, before its tool/retry is durable or while the retry
// runs, leaves the call unknown; the continuation of that continuation
// runs it again, with the same key, citing the same unknown result, and
// reconciles it. The log verifies.
func TestARetryCutShortIsRetriedByTheNextContinuation(t *testing.T) {
	cases := []struct {
		name string
		// kept: how many records of the killed continuation are durable
		// (turn/start, tool/retry), -1 all that were appended.
		kept    int
		retries int // tool/retry records in the end
	}{
		{"before tool/retry is durable", 1, 1},
		{"while the retry runs", -1, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &payments{}
			dir, id, callID := crashedPay(t, true, p)
			r := reopen(t, dir, id)
			unknown := unknownResult(t, r.sess.Records(), callID)
			before := r.sess.Len()

			// The first continuation is killed while its retry runs.
			started, release := make(chan struct{}), make(chan struct{})
			blocked := p.tool(true, func(context.Context) (string, error) {
				close(started)
				<-release
				return "paid, too late", nil
			})
			a := agentloop.New(r.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(&recorder{}), agentloop.WithTools(blocked))
			done := make(chan error, 1)
			go func() {
				_, err := a.Continue(context.Background(), r.sess)
				done <- err
			}()
			waitFor(t, started)
			n := -1
			if tc.kept >= 0 {
				n = before + tc.kept
			}
			dir2 := killedCopy(t, r.sess, n)
			close(release)
			require.NoError(t, <-done)

			// The next process continues the continuation.
			r2 := reopen(t, dir2, id)
			recs := r2.sess.Records()
			require.Equal(t, session.ReasonInterrupted, decode[session.TurnEnd](t, recs[len(recs)-1]).Reason)
			require.Equal(t, 2, recs[len(recs)-1].Turn())
			a2 := agentloop.New(r2.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(&recorder{}), agentloop.WithTools(p.tool(true, paid)))
			res, err := a2.Continue(context.Background(), r2.sess)
			require.NoError(t, err)
			assert.Equal(t, 3, res.Turn)

			key := session.IdempotencyKey(id, callID)
			assert.Equal(t, []string{key, key, key}, p.runs())
			retries := ofType(r2.sess.Records(), session.TypeToolRetry)
			require.Len(t, retries, tc.retries)
			last := retries[len(retries)-1]
			assert.Equal(t, 3, last.Turn())
			assert.Equal(t, []int64{unknown}, last.Sources())
			rcs := ofType(r2.sess.Records(), session.TypeToolReconcile)
			require.Len(t, rcs, 1)
			assert.Equal(t, 3, rcs[0].Turn())
			assert.Equal(t, []int64{unknown, last.Seq()}, rcs[0].Sources())
			assert.Equal(t, "paid", decode[session.ToolReconcile](t, rcs[0]).Content)
			r2.verify(t)
		})
	}
}

// TestARetryInAForkUsesTheKeyOfTheSessionTheCallRanIn: a fork (of a
// fork) of a session whose call a kill left unknown inherits the call;
// its continuation runs the call again with the key it first ran with,
// the original session's, so the effect still happens once.
func TestARetryInAForkUsesTheKeyOfTheSessionTheCallRanIn(t *testing.T) {
	p := &payments{}
	dir, id, callID := crashedPay(t, true, p)
	r := reopen(t, dir, id)
	ctx := context.Background()
	end := int64(r.sess.Len() - 1) // the interrupted turn's turn/end
	fork, err := r.mgr.Fork(ctx, id, end)
	require.NoError(t, err)
	forkOfFork, err := r.mgr.Fork(ctx, fork.ID(), end)
	require.NoError(t, err)
	a := agentloop.New(r.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(&recorder{}), agentloop.WithTools(p.tool(true, paid)))
	res, err := a.Continue(ctx, forkOfFork)
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	key := session.IdempotencyKey(id, callID)
	assert.Equal(t, []string{key, key}, p.runs())
	require.Len(t, ofType(forkOfFork.Records(), session.TypeToolReconcile), 1)
}
