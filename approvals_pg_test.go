package vigil_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	pgplugin "github.com/vigil-run/vigil/plugins/store/postgres"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// pgAskingAgent is askingAgent over PostgreSQL: the runtimes opened on
// one schema are processes sharing one database.
func pgAskingAgent(dsn, schema string, script ...scripted.Reply) vigil.Source {
	return vigil.Compose(
		vigil.Plugin("store/postgres", &pgplugin.Config{DSN: dsn, Schema: schema}),
		vigil.Plugin("provider/scripted", scripted.Config{Script: script}),
		vigil.Plugin("tools/calc", nil),
		vigil.Plugin("approvals", approvals.Config{Rules: []approvals.Rule{{Tool: "calc", Action: "ask", Reason: "arithmetic needs a yes"}}}),
		vigil.Plugin("agent", nil),
	)
}

// TestTwoRuntimesDecidingOneCallOnPostgresLogOneDecision: two runtimes
// (two processes, each with its own store and lease holder) decide the
// same pending call of one session at once. Exactly one decision is
// logged and resumes the turn (when no other call waits), once, where it
// was given; the other
// decider is told the call was already decided and by whom — or, if it
// does not wait for the lease while the winner holds it, that the
// session is busy. The log verifies.
func TestTwoRuntimesDecidingOneCallOnPostgresLogOneDecision(t *testing.T) {
	oneCalc := scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "6*7"}}}}
	done := scripted.Reply{Text: "It is 42."}
	cases := []struct {
		name  string
		reply scripted.Reply
		wait  [2]bool
	}{
		{"both wait for the lease", oneCalc, [2]bool{true, true}},
		{"one does not wait", oneCalc, [2]bool{true, false}},
		// The winner's decision leaves the step waiting for another call.
		{"another call still waits", twoCalcs, [2]bool{true, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dsn, schema := pgtest.DSN(t), pgtest.Schema(t)
			a := open(t, pgAskingAgent(dsn, schema, tc.reply, done))
			res, err := a.Turn(ctx, vigil.TurnOptions{Prompt: "compute"})
			require.ErrorIs(t, err, vigil.ErrSuspended)
			require.Len(t, res.Pending, len(tc.reply.ToolCalls))
			id, call := res.Session, res.Pending[0].Call.ID
			resumes := len(res.Pending) == 1
			b := open(t, pgAskingAgent(dsn, schema, done))

			deciders := [2]struct {
				rt *vigil.Runtime
				by string
			}{{a, "ana"}, {b, "bo"}}
			var (
				results [2]*vigil.Result
				errs    [2]error
				wg      sync.WaitGroup
				start   = make(chan struct{})
			)
			for i, d := range deciders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					results[i], errs[i] = d.rt.Decide(ctx, vigil.DecideOptions{Session: id, Call: call, Wait: tc.wait[i],
						Decision: vigil.Decision{Allow: true, By: d.by}})
				}()
			}
			close(start)
			wg.Wait()

			log, err := b.Session(ctx, id)
			require.NoError(t, err)
			var decisions []session.ApprovalDecision
			starts, ends := 0, 0
			for _, r := range log.Records {
				switch r.Type() {
				case session.TypeApprovalDecision:
					d, err := session.DecodeData[session.ApprovalDecision](r)
					require.NoError(t, err)
					decisions = append(decisions, d)
				case session.TypeToolStart:
					starts++
				case session.TypeTurnEnd:
					ends++
				}
			}
			require.Len(t, decisions, 1, "exactly one decision is logged")
			if !resumes {
				assert.Zero(t, starts+ends, "the step still waits")
			} else {
				assert.Equal(t, 1, starts, "the tool ran once")
				assert.Equal(t, 1, ends, "the turn resumed and ended once")
			}
			won := 0
			if decisions[0].By == deciders[1].by {
				won = 1
			}
			lost := 1 - won
			require.NoError(t, errs[won])
			if !resumes {
				assert.Nil(t, results[won])
			} else {
				require.NotNil(t, results[won], "the turn resumed where the decision was given")
				assert.Equal(t, session.ReasonCompleted, results[won].Reason)
				assert.Equal(t, "It is 42.", results[won].Content)
			}

			assert.Nil(t, results[lost])
			if errors.Is(errs[lost], vigil.ErrBusy) {
				assert.False(t, tc.wait[lost], "only a decider that does not wait is told the session is busy: %v", errs[lost])
			} else {
				require.ErrorIs(t, errs[lost], session.ErrAlreadyDecided)
				var de *session.DecidedError
				require.ErrorAs(t, errs[lost], &de)
				assert.Equal(t, deciders[won].by, de.Decision.By)
				assert.ErrorContains(t, errs[lost], "allowed by "+deciders[won].by)
			}
			t.Logf("%s decided; %s was told: %v", deciders[won].by, deciders[lost].by, errs[lost])

			data := session.AppendHeaderLine(nil, log.Info)
			for _, r := range log.Records {
				data = r.AppendLine(data)
			}
			rep, err := invariants.Verify(bytes.NewReader(data))
			require.NoError(t, err)
			assert.Empty(t, rep.Violations)
		})
	}
}

// Reviewers in several processes queuing a decision on one call at once
// on PostgreSQL: one is queued, every other is refused (the unique index
// of the jobs table), and the worker logs one decision.
func TestQueuedDecisionsOnOneCallAcrossProcessesQueueOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, schema := pgtest.DSN(t), pgtest.Schema(t)
	oneCalc := scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "6*7"}}}}
	first := open(t, pgAskingAgent(dsn, schema, oneCalc, scripted.Reply{Text: "It is 42."}))
	res, err := first.Turn(ctx, vigil.TurnOptions{Prompt: "6 times 7?"})
	require.ErrorIs(t, err, vigil.ErrSuspended)
	id, call := res.Session, res.Pending[0].Call.ID

	rts := []*vigil.Runtime{first, open(t, pgAskingAgent(dsn, schema)), open(t, pgAskingAgent(dsn, schema))}
	const each = 4
	var mu sync.Mutex
	queued, refused := 0, 0
	var wg sync.WaitGroup
	for _, rt := range rts {
		for range each {
			wg.Go(func() {
				_, _, err := rt.QueueDecision(ctx, id, call, vigil.Decision{Allow: true, By: "ana"})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					queued++
				case errors.Is(err, session.ErrDuplicateJob):
					refused++
				default:
					assert.NoError(t, err)
				}
			})
		}
	}
	wg.Wait()
	assert.Equal(t, 1, queued)
	assert.Equal(t, len(rts)*each-1, refused)

	wctx, stop := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- first.Work(wctx, vigil.WorkOptions{Worker: "w"}) }()
	end := waitIdle(t, first, id)
	stop()
	require.NoError(t, <-worked)
	assert.Equal(t, session.ReasonCompleted, end.Reason)
	assert.Len(t, decisionsOf(t, first, id), 1)
}
