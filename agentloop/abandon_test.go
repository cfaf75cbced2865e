package agentloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// TestCancelledTurnAbandonsToolsThatIgnoreTheirContext: a tool that never
// returns cannot keep a cancelled turn open. After the grace its call is
// answered TOOL_ABANDONED, the turn ends aborted and the log verifies;
// a tool of the same batch that honours cancellation keeps its own result.
func TestCancelledTurnAbandonsToolsThatIgnoreTheirContext(t *testing.T) {
	cases := []struct {
		name  string
		calls []scripted.ToolCall
		codes []string
	}{
		{"alone", []scripted.ToolCall{{Name: "stuck"}}, []string{agentloop.CodeToolAbandoned}},
		// The polite calls after the stuck one have returned long before its
		// grace is over; they keep their own results (each used to lose it
		// to TOOL_ABANDONED with probability 1/4).
		{"in a batch", []scripted.ToolCall{{Name: "polite"}, {Name: "stuck"}, {Name: "polite"}, {Name: "polite"}, {Name: "polite"}},
			[]string{session.CodeToolOutcomeUnknown, agentloop.CodeToolAbandoned, session.CodeToolOutcomeUnknown, session.CodeToolOutcomeUnknown, session.CodeToolOutcomeUnknown}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			release := make(chan struct{})
			// The abandoned goroutine ends with the test (goleak). The grace
			// is long enough for the polite tools to return on a loaded
			// machine; only the stuck one waits it out.
			t.Cleanup(func() { close(release) })
			stuck := funcTool{name: "stuck", safe: true, fn: func(context.Context, json.RawMessage) (string, error) {
				cancel()
				<-release
				return "too late", nil
			}}
			polite := funcTool{name: "polite", safe: true, fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
				<-ctx.Done()
				return "", ctx.Err()
			}}
			prov := script(t, scripted.Reply{ToolCalls: tc.calls}, scripted.Reply{Text: "never asked"})
			a := agentloop.New(e.c, agentloop.Config{ToolGrace: time.Second}, agentloop.WithProvider(prov), agentloop.WithTools(stuck, polite))
			sess := e.session()

			type ran struct {
				res *agentloop.TurnResult
				err error
			}
			done := make(chan ran, 1)
			go func() {
				res, err := a.Run(ctx, sess, "go")
				done <- ran{res, err}
			}()
			var r ran
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				release <- struct{}{} // let the turn end, then fail
				<-done
				t.Fatal("the cancelled turn waited for a tool that ignores its context")
			}
			require.ErrorIs(t, r.err, context.Canceled)
			require.NotNil(t, r.res)
			assert.Equal(t, session.ReasonAborted, r.res.Reason)

			recs := sess.Records()
			results := ofType(recs, session.TypeToolResult)
			require.Len(t, results, len(tc.codes))
			for i, code := range tc.codes {
				res := decode[session.ToolResult](t, results[i])
				require.NotNil(t, res.Error, "result %d", i)
				assert.Equal(t, code, res.Error.Code, "result %d: %s", i, res.Error.Message)
			}
			end := decode[session.TurnEnd](t, recs[len(recs)-1])
			assert.Equal(t, session.ReasonAborted, end.Reason)

			buf := session.AppendHeaderLine(nil, sess.Info())
			for _, rec := range recs {
				buf = rec.AppendLine(buf)
			}
			rep, err := invariants.Verify(bytes.NewReader(buf))
			require.NoError(t, err)
			assert.Empty(t, rep.Violations)
		})
	}
}

func TestConfigRefusesNegativeToolGrace(t *testing.T) {
	cfg := agentloop.Config{ToolGrace: -time.Second}
	assert.ErrorContains(t, cfg.Validate(), "tool_grace")
	assert.Equal(t, agentloop.DefaultToolGrace, agentloop.New(newEnv(t).c, agentloop.Config{}).Config().ToolGrace)
}
