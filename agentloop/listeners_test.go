package agentloop_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
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

// TestListenerChangesAreRefusedOrReachNothingAtAnyStep: listeners are
// handed a read-only view of the loop's fold, the same at every step, so
// what a listener does to the request must either be refused (a request
// whose messages it replaced with different ones, at a later step, for an
// early message or tool call) or reach nothing (the tool calls of the
// messages it reads are its own; a request kept from an earlier step is
// not the next one; reflect cannot write the view). An equal copy put in
// place is not a change.
func TestListenerChangesAreRefusedOrReachNothingAtAnyStep(t *testing.T) {
	const at = 3 // the turn whose request is written
	for _, tc := range []struct {
		name string
		// during is called in the llm/stream dispatch of turn at; kept is
		// the request of turn at-1.
		during  func(t *testing.T, req *agentloop.Request)
		between func(t *testing.T, kept *agentloop.Request)
		refused bool
	}{
		{name: "an early message, at a later step", refused: true, during: func(_ *testing.T, req *agentloop.Request) {
			req.Messages = edited(req.Messages, func(ms []session.Message) { ms[0].Content = forged })
		}},
		{name: "an early tool call, at a later step", refused: true, during: func(_ *testing.T, req *agentloop.Request) {
			req.Messages = edited(req.Messages, func(ms []session.Message) {
				i := slices.IndexFunc(ms, func(m session.Message) bool { return len(m.ToolCalls) > 0 })
				ms[i].ToolCalls[0].Arguments = `{"expression":"` + forged + `"}`
			})
		}},
		{name: "a whole early message, at a later step", refused: true, during: func(_ *testing.T, req *agentloop.Request) {
			req.Messages = edited(req.Messages, func(ms []session.Message) { ms[1] = session.Message{Role: session.RoleUser, Content: forged} })
		}},
		{name: "the tool calls of the messages it reads", during: func(_ *testing.T, req *agentloop.Request) {
			for _, m := range req.Messages.All() {
				for i := range m.ToolCalls {
					m.ToolCalls[i].Arguments = `{"expression":"` + forged + `"}`
				}
			}
		}},
		{name: "through a request kept from the step before", between: func(_ *testing.T, kept *agentloop.Request) {
			for _, m := range kept.Messages.All() {
				for i := range m.ToolCalls {
					m.ToolCalls[i].Arguments = forged
				}
			}
			kept.Messages = edited(kept.Messages, func(ms []session.Message) { ms[0].Content = forged })
		}},
		{name: "through reflect", during: func(t *testing.T, req *agentloop.Request) {
			// reflect reads the unexported array but cannot write it; only
			// unsafe could (see agentloop's doc).
			arr := reflect.ValueOf(&req.Messages).Elem().Field(0)
			require.Equal(t, reflect.Slice, arr.Kind())
			assert.False(t, arr.CanSet())
			assert.False(t, arr.Index(0).FieldByName("Content").CanSet())
			assert.Panics(t, func() { arr.Index(0).FieldByName("Content").SetString(forged) })
			assert.Panics(t, func() { arr.Set(reflect.ValueOf([]session.Message{{Role: session.RoleUser, Content: forged}})) })
			assert.Panics(t, func() { _ = arr.Interface() })
		}},
		{name: "an equal copy put in place", during: func(_ *testing.T, req *agentloop.Request) {
			req.Messages = edited(req.Messages, func(ms []session.Message) {
				ms[0].Content = strings.Clone(ms[0].Content)
				ms[1].ToolCalls = append([]session.ToolCall(nil), ms[1].ToolCalls...)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			turn := 0
			var kept *agentloop.Request
			agentloop.LLMStream.On(e.c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
				if turn == at && tc.during != nil {
					tc.during(t, req)
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
					tc.between(t, kept)
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
				for _, m := range r.Messages.All() {
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

// edited returns a copy of msgs changed by edit: a listener cannot write
// the messages it is handed, only put others in their place.
func edited(msgs session.Messages, edit func([]session.Message)) session.Messages {
	ms := msgs.Clone()
	edit(ms)
	return session.NewMessages(ms)
}
