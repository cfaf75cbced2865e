package agentloop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session"
)

const forged = "something the log never saw"

// TestSealRefusesWritesToTheListenersCopyAtAnyStep: the listeners' copy
// of the messages is kept from step to step and only its new messages
// are copied, so what a listener writes into it must be refused whenever
// and wherever it writes: into an early message or tool call at a later
// step, or through a request kept from an earlier step, between steps.
// An equal value written back is not a change. After a refusal the next
// turn runs on a copy made again.
func TestSealRefusesWritesToTheListenersCopyAtAnyStep(t *testing.T) {
	const at = 3 // the turn whose request is written
	for _, tc := range []struct {
		name string
		// during is called in the llm/stream dispatch of turn at; kept is
		// the request of turn at-1.
		during  func(req *agentloop.Request)
		between func(kept *agentloop.Request)
		refused bool
	}{
		{name: "an early message, at a later step", refused: true, during: func(req *agentloop.Request) {
			req.Messages[0].Content = forged
		}},
		{name: "an early tool call, at a later step", refused: true, during: func(req *agentloop.Request) {
			for i := range req.Messages {
				if len(req.Messages[i].ToolCalls) > 0 {
					req.Messages[i].ToolCalls[0].Arguments = `{"expression":"` + forged + `"}`
					return
				}
			}
		}},
		{name: "a whole early message, at a later step", refused: true, during: func(req *agentloop.Request) {
			req.Messages[1] = session.Message{Role: session.RoleUser, Content: forged}
		}},
		{name: "through a request kept from the step before", refused: true, between: func(kept *agentloop.Request) {
			kept.Messages[0].Content = forged
		}},
		{name: "equal values written back", during: func(req *agentloop.Request) {
			req.Messages[0].Content = strings.Clone(req.Messages[0].Content)
			m := &req.Messages[1]
			m.ToolCalls = append([]session.ToolCall(nil), m.ToolCalls...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			turn := 0
			var kept *agentloop.Request
			agentloop.LLMStream.On(e.c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
				if turn == at && tc.during != nil {
					tc.during(req)
				}
				kept = req
				return next(ctx, req)
			})
			prov, err := scripted.New(scripted.Config{Repeat: true, Script: []scripted.Reply{{
				Text:      "Let me compute that.",
				ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "21*2"}}},
			}}})
			require.NoError(t, err)
			rec := &recorder{}
			a := agentloop.New(e.c, agentloop.Config{MaxSteps: 1}, agentloop.WithProvider(recordingProvider{rec, prov}), agentloop.WithTools(calc.Tool{}))
			sess := e.session()
			for turn = 1; turn <= at+1; turn++ {
				if turn == at && tc.between != nil {
					tc.between(kept)
				}
				res, err := a.Run(context.Background(), sess, "What is 21 times two?")
				if turn == at && tc.refused {
					// The seal refuses it, or the invariants plugin's check
					// does first when it compares what was written.
					require.Error(t, err)
					require.True(t, errors.Is(err, agentloop.ErrRequestMutated) || errors.Is(err, agentloop.ErrInvariant), "refused: %v", err)
					assert.Equal(t, session.ReasonError, res.Reason)
					continue
				}
				require.NoError(t, err, "turn %d", turn)
				assert.Equal(t, session.ReasonMaxSteps, res.Reason)
			}
			reqs := rec.requests()
			want := at + 1
			if tc.refused {
				want--
			}
			require.Len(t, reqs, want, "the refused request never reaches the provider")
			for _, r := range reqs {
				for _, m := range r.Messages {
					assert.NotContains(t, m.Content, forged)
					for _, c := range m.ToolCalls {
						assert.NotContains(t, c.Arguments, forged)
					}
				}
			}
			verifyLog(t, sess.Info(), sess.Records())
		})
	}
}
