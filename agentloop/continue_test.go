package agentloop_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// crashMidTool runs a turn whose tool blocks and, while it runs, takes the
// log as a process killed at that moment leaves it: the records appended
// so far, written to a JSONL file in a directory of its own. It returns
// that directory and the session's id.
func crashMidTool(t *testing.T) (dir, id string) {
	t.Helper()
	e := newEnv(t)
	started := make(chan struct{})
	release := make(chan struct{})
	slow := funcTool{name: "slow", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		close(started)
		<-release
		return "done, too late", nil
	}}
	prov := script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "slow", Arguments: `{"n":1}`}}}, scripted.Reply{Text: "never asked"})
	a := agentloop.New(e.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(prov), agentloop.WithTools(slow))
	sess := e.session()
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), sess, "do the slow thing")
		done <- err
	}()
	<-started // tool/start is logged before the tool runs
	buf := session.AppendHeaderLine(nil, sess.Info())
	for _, r := range sess.Records() {
		buf = r.AppendLine(buf)
	}
	close(release)
	require.NoError(t, <-done)

	dir = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, sess.ID()+".jsonl"), buf, 0o644))
	return dir, sess.ID()
}

// TestContinueCarriesOnAnInterruptedTurn: a session whose process died
// while a tool ran is repaired when a new process opens it (the call
// answered TOOL_OUTCOME_UNKNOWN, the turn ended interrupted); Continue
// then runs turn 2 as its continuation, without a user message, and the
// model is asked again from the fold, which shows the unknown outcome.
// The log verifies.
func TestContinueCarriesOnAnInterruptedTurn(t *testing.T) {
	dir, id := crashMidTool(t)

	store, err := jsonl.Open(dir)
	require.NoError(t, err)
	e := newEnvWith(t, store)
	ctx := context.Background()
	sess, err := e.mgr.Open(ctx, id)
	require.NoError(t, err)
	recs := sess.Records()
	require.Equal(t, session.TypeTurnEnd, recs[len(recs)-1].Type())
	require.Equal(t, session.ReasonInterrupted, decode[session.TurnEnd](t, recs[len(recs)-1]).Reason)
	before := len(recs)

	rec := &recorder{}
	a := agentloop.New(e.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(rec), agentloop.WithTools(funcTool{name: "slow"}))
	res, err := a.Continue(ctx, sess)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Turn)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, "ok", res.Content)

	reqs := rec.requests()
	require.Len(t, reqs, 1)
	msgs := reqs[0].Messages
	require.NotEmpty(t, msgs)
	last := msgs.At(msgs.Len() - 1)
	assert.Equal(t, session.RoleTool, last.Role, "the model is asked again from the interrupted call's result")
	assert.Contains(t, last.Content, session.CodeToolOutcomeUnknown)
	assert.Len(t, ofType(sess.Records(), session.TypeUserMessage), 1, "a continuation adds no user message")

	start := sess.Records()[before]
	require.Equal(t, session.TypeTurnStart, start.Type())
	assert.Equal(t, 2, start.Turn())
	assert.Equal(t, session.TurnStart{Continues: 1}, decode[session.TurnStart](t, start))
	assert.Contains(t, string(start.Bytes()), `"data":{"continues":1}`)

	require.NoError(t, sess.Close(ctx))
	require.NoError(t, store.Close())
	rep, err := invariants.VerifyFile(filepath.Join(dir, id+".jsonl"))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
}

// TestContinueRefusesWhatIsNotInterrupted: a session with no turn, one
// whose last turn completed, and one with a turn open are refused, and
// nothing is appended.
func TestContinueRefusesWhatIsNotInterrupted(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, e *env, a *agentloop.Agent) *live.Session
		want  error
	}{
		{"no turn", func(t *testing.T, e *env, a *agentloop.Agent) *live.Session { return e.session() }, agentloop.ErrNothingToContinue},
		{"completed", func(t *testing.T, e *env, a *agentloop.Agent) *live.Session {
			s := e.session()
			_, err := a.Run(context.Background(), s, "hi")
			require.NoError(t, err)
			return s
		}, agentloop.ErrNothingToContinue},
		{"open turn", func(t *testing.T, e *env, a *agentloop.Agent) *live.Session {
			s := e.session()
			_, err := s.Append(context.Background(), session.Event{Type: session.TypeTurnStart, Turn: 1, Data: session.TurnStart{}})
			require.NoError(t, err)
			return s
		}, session.ErrOpenTurn},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			rec := &recorder{}
			a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(rec))
			s := tc.setup(t, e, a)
			n, calls := len(s.Records()), len(rec.requests())
			res, err := a.Continue(context.Background(), s)
			require.ErrorIs(t, err, tc.want)
			assert.Nil(t, res)
			assert.Len(t, s.Records(), n, "a refused continuation appends nothing")
			assert.Len(t, rec.requests(), calls, "nor asks the model")
			if tc.want == agentloop.ErrNothingToContinue {
				var nc *agentloop.NothingToContinueError
				require.ErrorAs(t, err, &nc)
				assert.Equal(t, s.ID(), nc.Session)
				if last, ok := lastEnd(t, s); ok {
					assert.Equal(t, last.Turn(), nc.Turn)
					assert.Equal(t, decode[session.TurnEnd](t, last).Reason, nc.Reason)
				} else {
					assert.Zero(t, nc.Turn)
				}
			}
		})
	}
}

// lastEnd is the session's last turn/end.
func lastEnd(t *testing.T, s *live.Session) (session.Record, bool) {
	t.Helper()
	ends := ofType(s.Records(), session.TypeTurnEnd)
	if len(ends) == 0 {
		return session.Record{}, false
	}
	return ends[len(ends)-1], true
}

// TestContinueRefusesAnOutputSchemaThatDoesNotCompile: a continuation is
// refused as Run refuses it when the agent's output schema is not JSON
// Schema; nothing more is logged.
func TestContinueRefusesAnOutputSchemaThatDoesNotCompile(t *testing.T) {
	dir, id := crashMidTool(t)
	store, err := jsonl.Open(dir)
	require.NoError(t, err)
	e := newEnvWith(t, store)
	sess, err := e.mgr.Open(context.Background(), id)
	require.NoError(t, err)
	before := len(sess.Records())

	cfg := agentloop.Config{System: "s", Model: "scripted", OutputSchema: map[string]any{"type": "strin"}}
	a := agentloop.New(e.c, cfg, agentloop.WithProvider(&recorder{}), agentloop.WithTools(funcTool{name: "slow"}))
	res, err := a.Continue(context.Background(), sess)
	require.ErrorContains(t, err, "output_schema is not a valid JSON Schema")
	assert.Nil(t, res)
	assert.Len(t, sess.Records(), before)
}
